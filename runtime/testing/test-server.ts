// A test-only `svc master` / `svc worker`: the same commands, with what no deployment may set (ServerTestHooks):
//   node --import tsx runtime/testing/test-server.ts [--planted-bug NAME] [--bind-host HOST]
//     [--durable-write-delay MS] [--scribble-returned-bodies on] master|worker …
// Started by LocalCluster when a test or the chaos soak asks for a planted bug or fault proxies. This folder is
// excluded from the package (package.json "files"), so the hooks never reach an installation.
import { Command } from 'commander';
import { PLANTED_BUGS, type PlantedBug } from '../../core/planted-bugs.ts';
import { masterCommand, workerCommand } from '../cli/server-commands.ts';
import type { ServerTestHooks } from '../process/server-parts.ts';

const args = process.argv.slice(2);
let testing: ServerTestHooks = {};
for (;;) {
  const [flag, value] = args;
  if (flag === '--planted-bug' && value !== undefined) {
    if (!(PLANTED_BUGS as readonly string[]).includes(value))
      throw new Error(`unknown planted bug ${value}; known: ${PLANTED_BUGS.join(', ')}`);
    testing = { ...testing, plantedBug: value as PlantedBug };
  } else if (flag === '--bind-host' && value !== undefined) {
    testing = { ...testing, bindHost: value };
  } else if (flag === '--durable-write-delay' && value !== undefined) {
    testing = { ...testing, durableWriteDelayMs: Number(value) };
  } else if (flag === '--scribble-returned-bodies' && value === 'on') {
    testing = { ...testing, scribbleReturnedBodies: true };
  } else break;
  args.splice(0, 2);
}

const program = new Command().name('test-server');
program.addCommand(masterCommand(testing));
program.addCommand(workerCommand(testing));
await program.parseAsync(args, { from: 'user' });
