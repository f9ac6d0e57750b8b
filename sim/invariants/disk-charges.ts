import type { Effect, Input, IoError, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';

/** Failures a disk can be blamed for: the device failed the operation, or had no room for it. */
const DISK_ERRORS: ReadonlySet<IoError> = new Set<IoError>(['IO_ERROR', 'NO_SPACE', 'TIMEOUT']);

/** The I/O failures one step of a worker handles: whether any could be the disk's, and which errors there were. */
interface HandledFailures {
  readonly node: NodeId;
  /** world.eventsProcessed when the step began: the step's effects are seen before the next event. */
  readonly event: number;
  readonly diskFault: boolean;
  readonly errors: readonly IoError[];
}

/**
 * disk-charged-for-disk-faults. A worker marks a disk failed (its `worker.disk.failed` line, the one place the core
 * does: core/machines/worker/storage-view.ts) only in the step that handles an I/O failure a disk can be blamed for:
 * an I/O error, no space, a timeout. A process out of file descriptors (NO_DESCRIPTORS, the simulator's descriptors
 * fault) says nothing of its disks, nor do EXISTS and NOT_FOUND (the worker's own bookkeeping): a step that handles
 * only those must mark no disk, or one exhausted process would take every disk of its worker out of use and have
 * the master exclude a worker whose disks are sound.
 *
 * The check is per step, not per operation: every operation of the worker's process fails with NO_DESCRIPTORS while
 * the fault lasts, before it reaches any disk (sim/world/storage.ts), so one step never mixes them with disk faults.
 */
export function diskChargedForDiskFaults(isWorker: (node: NodeId) => boolean): Observer {
  let handling: HandledFailures | undefined;
  return {
    inputs: ['ioFailed', 'ioBatchDone'],
    onInput(node: NodeId, input: Input, world: World) {
      if (!isWorker(node)) return;
      const errors: IoError[] = [];
      if (input.kind === 'ioFailed') errors.push(input.error);
      else if (input.kind === 'ioBatchDone') {
        for (const completion of input.completions) {
          if (completion.kind === 'ioFailed') errors.push(completion.error);
        }
      }
      handling = {
        node,
        event: world.eventsProcessed,
        diskFault: errors.some((error) => DISK_ERRORS.has(error)),
        errors,
      };
    },
    effects: ['log'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (effect.kind !== 'log' || effect.event !== 'worker.disk.failed' || !isWorker(node)) return;
      const current =
        handling !== undefined && handling.node === node && handling.event === world.eventsProcessed
          ? handling
          : undefined;
      if (current?.diskFault === true) return;
      const fields = effect.fields ?? {};
      const disk = typeof fields['disk'] === 'string' ? fields['disk'] : '?';
      const problem = typeof fields['problem'] === 'string' ? fields['problem'] : '?';
      world.fail({
        invariant: 'disk-charged-for-disk-faults',
        node,
        detail:
          current === undefined
            ? `${node} marked disk ${disk} failed (${problem}) in a step that handled no I/O failure`
            : `${node} marked disk ${disk} failed (${problem}) while handling only ${[...new Set(current.errors)].join(', ')}: ` +
              'none of them is the fault of a disk (NO_DESCRIPTORS: the process ran out of file descriptors)',
      });
    },
  };
}
