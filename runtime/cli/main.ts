// The `svc` command line. Subcommands are registered by their own modules so that each stays small.
import { Command } from 'commander';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { confCommand, localClusterConfiguration } from './conf-command.ts';
import { masterCommand, workerCommand } from './server-commands.ts';

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
    console.log(
      '\nNext, the demo job: one application (release 0.6.0, replication on) writes 8 maps × 24 partitions × 40\n' +
        'records of 1 KiB, with a speculative second attempt of map 3, through the real master, worker, lifecycle-\n' +
        'manager and task state machines of core/, in an in-process cluster of three workers run by the\n' +
        "deterministic simulator without faults. Its invariants check that every reducer reads each winning map's\n" +
        'records exactly once. To see every message:\n' +
        "  npm run sim -- --scenario demo --seed 1 --faults '' --knobs storm=0 --trace\n",
    );
  });

program.addCommand(masterCommand());
program.addCommand(workerCommand());
program.addCommand(confCommand());

await program.parseAsync(process.argv);
