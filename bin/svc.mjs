#!/usr/bin/env node
// The `svc` command: runs the TypeScript CLI through tsx so that `npx svc ...` works straight after `npm ci`. It is
// where the runtime's commands and the conformance suite's meet: the suite imports the runtime's client, never the
// reverse.
import { register } from 'tsx/esm/api';

register();
const { svcProgram } = await import('../runtime/cli/program.ts');
const { conformanceCommand } = await import('../conformance/command.ts');
const program = svcProgram();
program.addCommand(conformanceCommand());
await program.parseAsync(process.argv);
