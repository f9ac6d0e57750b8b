// One process of a seed pool (./pool.ts): runs the seeds its parent hands it, one at a time, and sends each result
// back. It holds no state between seeds beyond compiled code: every run starts from its seed.
import { CHILD_SETTINGS_VARIABLE, type ChildSettings, type FromChild, type ToChild } from './pool.ts';
import { runSeed } from './run.ts';
import { scenarioNamed } from './scenarios.ts';

function tell(message: FromChild): void {
  // A parent that has gone (it failed, or was interrupted) cannot be told anything: the child just ends, rather
  // than adding an EPIPE stack of its own to whatever the parent printed.
  if (!process.connected) return;
  process.send!(message, (error: Error | null) => {
    if (error !== null) process.exit(0);
  });
}

function main(): void {
  if (process.send === undefined) throw new Error('pool-child.ts is started by sim/pool.ts, not by hand');
  let settings: ChildSettings;
  try {
    settings = JSON.parse(process.env[CHILD_SETTINGS_VARIABLE] ?? '') as ChildSettings;
  } catch {
    tell({ kind: 'error', message: `${CHILD_SETTINGS_VARIABLE} is missing or not JSON` });
    return;
  }
  const scenario = scenarioNamed(settings.scenario);
  const bug = settings.plantedBug === undefined ? {} : { plantedBug: settings.plantedBug };
  if (settings.warmUp) runSeed({ seed: 0, scenario, ...bug });
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: ToChild) => {
    if (message.kind === 'stop') {
      process.disconnect();
      return;
    }
    try {
      tell({ kind: 'result', result: runSeed({ seed: message.seed, scenario, ...bug }) });
    } catch (error) {
      tell({
        kind: 'error',
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
  });
  tell({ kind: 'ready' });
}

main();
