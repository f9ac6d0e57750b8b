// The `svc` command line. Subcommands are registered by their own modules so that each stays small.
import { Command } from 'commander';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { adminCommand } from './admin-command.ts';
import { confCommand } from './conf-command.ts';
import { conformanceCommand } from './conformance-command.ts';
import { demoCommand } from './demo-command.ts';
import { masterCommand, workerCommand } from './server-commands.ts';

const program = new Command();
program.name('svc').description('svc: a remote shuffle service').version(CURRENT_RELEASE);

program.addCommand(demoCommand());
program.addCommand(masterCommand());
program.addCommand(workerCommand());
program.addCommand(confCommand());
program.addCommand(adminCommand());
program.addCommand(conformanceCommand());

await program.parseAsync(process.argv);
