// The `svc` command line. Subcommands are registered by their own modules so that each stays small.
import { Command } from 'commander';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { confCommand, localClusterConfiguration } from './conf-command.ts';

const program = new Command();
program.name('svc').description('svc: a remote shuffle service').version(CURRENT_RELEASE);

program
  .command('demo')
  .description(
    'run the embedded local demo (until the data plane exists: show the local cluster it will start)',
  )
  .action(() => {
    console.log(
      `svc ${CURRENT_RELEASE}: local cluster demo (one master, three workers) — data plane pending.\n` +
        'The cluster it will start, and the configuration it resolves:\n',
    );
    console.log(localClusterConfiguration().join('\n'));
  });

program.addCommand(confCommand());

await program.parseAsync(process.argv);
