// The source tree's `svc`: the runtime's commands and the conformance suite's. It is where the two meet: the suite
// imports the runtime's client, never the reverse. bin/svc.mjs runs it, compiled or through tsx.
import { conformanceCommand } from '../conformance/command.ts';
import { svcServerCommand } from '../runtime/cluster/server-process.ts';
import { svcProgram } from '../runtime/cli/program.ts';

const program = svcProgram();
program.addCommand(conformanceCommand({ name: 'conformance', defaultServerCommand: svcServerCommand }));
await program.parseAsync(process.argv);
