import { partitionFileName, shuffleKey } from '../../core/domain/index.ts';
import { STATE_POLICIES } from '../../core/lifecycle/worker-states.ts';
import type { NodeId } from '../../core/machines/effects.ts';
import type { ReduceTaskState } from '../../core/machines/client/reduce-task.ts';
import { getFile } from '../../core/machines/worker/files.ts';
import type { WorkerMachineState } from '../../core/machines/worker/state.ts';
import { workerNodeId } from '../../core/protocol/node-ids.ts';
import type { World } from '../world/world.ts';

/**
 * Whether a reducer that reported its partition unreadable could in fact have read it: for every epoch of its read
 * plan, a copy that a worker holds as committed and whole on its storage, and that has run without a break since
 * the reducer started (`since`). Returns where those copies are, or undefined when some epoch really has no such
 * copy (the data is lost, its worker went away during the read, or the reducer never got a plan: the lifecycle
 * manager itself reported the loss).
 *
 * Asked only of reducers that started after the faults ended: then nothing (no partition, disk fault window or
 * slow disk) stands between a reducer and a committed, intact copy on a worker that stays up, so a read that still
 * fails is a bug, not lost data. (A worker restarted by a rolling upgrade during the read loses the reducer's
 * request with its old process: that is not a fault of the schedule, and upgrade seed 12294 showed it.) It reads
 * the machines' state (a worker's file records, a reducer's plan) and the simulated disks: what the cluster really
 * holds, which no message tells.
 */
export function readableCopies(world: World, reducer: NodeId, since: number): string | undefined {
  const state = world.stateOf(reducer) as ReduceTaskState | undefined;
  const plan = state?.plan;
  if (state === undefined || plan === undefined || plan.epochs.length === 0) return undefined;
  const key = shuffleKey(state.config.appId, state.config.shuffleId);
  const found: string[] = [];
  for (const epoch of plan.epochs) {
    const copy = epoch.copies.find(({ location, file }) => {
      const node = workerNodeId(location.worker);
      if ((world.upSince(node) ?? Infinity) > since) return false;
      const worker = world.stateOf(node) as WorkerMachineState;
      // A worker on its way out at an operator's word (Exit: it waits only for the master to hear so) serves no
      // reads by design: its copies are not there to be read.
      if (!STATE_POLICIES[worker.lifecycle.state].servesCommitsAndFetches) return false;
      const record = getFile(worker, key, partitionFileName(location));
      if (record?.status !== 'committed' || record.bytes < file.bytes) return false;
      return (world.storageOf(node)?.fileLength(record.file) ?? -1) >= file.bytes;
    });
    if (copy === undefined) return undefined;
    found.push(`epoch ${epoch.epoch} ${copy.location.mode} on ${workerNodeId(copy.location.worker)}`);
  }
  return found.join(', ');
}
