// The `svc` command line of the servers. Subcommands are registered by their own modules so that each stays small;
// bin/svc.mjs adds `svc conformance` (conformance/command.ts), which the runtime must not import (docs/architecture.md).
import { Command } from 'commander';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { adminCommand } from './admin-command.ts';
import { confCommand } from './conf-command.ts';
import { demoCommand } from './demo-command.ts';
import { documentationLine } from './docs-location.ts';
import { masterCommand, workerCommand } from './server-commands.ts';

export function svcProgram(): Command {
  const program = new Command();
  program.name('svc').description('svc: a remote shuffle service').version(CURRENT_RELEASE);
  program.addCommand(demoCommand());
  program.addCommand(masterCommand());
  program.addCommand(workerCommand());
  program.addCommand(confCommand());
  program.addCommand(adminCommand());
  const documentation = `\n${documentationLine()}`;
  program.addHelpText('after', documentation);
  for (const command of program.commands) command.addHelpText('after', documentation);
  return program;
}
