import type { BatchableIo, Effect, Input, IoError, NodeId } from '../../core/machines/effects.ts';
import { isBatchable } from '../../core/machines/worker/io-batch.ts';
import type { Observer, World } from '../world/world.ts';

/** Failures a disk can be blamed for: the device failed the operation, or had no room for it. */
const DISK_ERRORS: ReadonlySet<IoError> = new Set<IoError>(['IO_ERROR', 'NO_SPACE', 'TIMEOUT']);

/** The I/O failures one step of a worker handles. */
interface HandledFailures {
  readonly node: NodeId;
  /** world.eventsProcessed when the step began: the step's effects are seen before the next event. */
  readonly event: number;
  /** The local disks (mount points) whose own operations failed with an error a disk can be blamed for. */
  readonly blamable: ReadonlySet<string>;
  readonly errors: readonly IoError[];
}

/**
 * disk-charged-for-disk-faults. A worker marks a disk failed (its `worker.disk.failed` line, the one place the core
 * does: core/machines/worker/storage-view.ts) only in the step that handles a failure of an operation on that very
 * disk that a disk can be blamed for: an I/O error, no space, a timeout. A process out of file descriptors
 * (NO_DESCRIPTORS, the simulator's descriptors fault) says nothing of its disks, nor do EXISTS and NOT_FOUND (the
 * worker's own bookkeeping), nor a failure on another disk: else one exhausted process would take every disk of its
 * worker out of use and have the master exclude a worker whose disks are sound.
 *
 * The disk of each operation comes from the effect that issued it (the target of a move), as the world executes
 * it, so the checker reads no machine state.
 */
export function diskChargedForDiskFaults(isWorker: (node: NodeId) => boolean): Observer {
  /** Per worker, the local disk of each operation in flight on one (op number → mount point). */
  const inFlight = new Map<NodeId, Map<number, string>>();
  let handling: HandledFailures | undefined;

  const issued = (node: NodeId, op: BatchableIo) => {
    const file = op.kind === 'moveFile' ? op.to : op.file;
    if (file.tier !== 'HDD' && file.tier !== 'SSD') return;
    let ops = inFlight.get(node);
    if (ops === undefined) inFlight.set(node, (ops = new Map<number, string>()));
    ops.set(op.op, file.mountPoint);
  };

  return {
    onStart(node: NodeId) {
      // A new incarnation counts its operations afresh; completions meant for the old one are dropped.
      inFlight.delete(node);
    },
    effects: ['createFile', 'write', 'flush', 'read', 'moveFile', 'ioBatch', 'log'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (!isWorker(node)) return;
      if (effect.kind === 'ioBatch') {
        for (const op of effect.ops) issued(node, op);
      } else if (effect.kind === 'log') {
        if (effect.event === 'worker.disk.failed') checkCharge(node, effect.fields ?? {}, world);
      } else if (isBatchable(effect)) {
        issued(node, effect);
      }
    },
    inputs: ['ioDone', 'ioFailed', 'ioBatchDone'],
    onInput(node: NodeId, input: Input, world: World) {
      if (!isWorker(node)) return;
      const ops = inFlight.get(node);
      const blamable = new Set<string>();
      const errors: IoError[] = [];
      const completed = (op: number, error: IoError | undefined) => {
        const disk = ops?.get(op);
        ops?.delete(op);
        if (error === undefined) return;
        errors.push(error);
        if (disk !== undefined && DISK_ERRORS.has(error)) blamable.add(disk);
      };
      if (input.kind === 'ioDone') completed(input.op, undefined);
      else if (input.kind === 'ioFailed') completed(input.op, input.error);
      else if (input.kind === 'ioBatchDone') {
        for (const c of input.completions) completed(c.op, c.kind === 'ioFailed' ? c.error : undefined);
      }
      handling = errors.length === 0 ? undefined : { node, event: world.eventsProcessed, blamable, errors };
    },
  };

  function checkCharge(node: NodeId, fields: Readonly<Record<string, unknown>>, world: World): void {
    const disk = typeof fields['disk'] === 'string' ? fields['disk'] : '?';
    const problem = typeof fields['problem'] === 'string' ? fields['problem'] : '?';
    const current =
      handling !== undefined && handling.node === node && handling.event === world.eventsProcessed
        ? handling
        : undefined;
    if (current?.blamable.has(disk) === true) return;
    world.fail({
      invariant: 'disk-charged-for-disk-faults',
      node,
      detail:
        current === undefined
          ? `${node} marked disk ${disk} failed (${problem}) in a step that handled no I/O failure`
          : `${node} marked disk ${disk} failed (${problem}) while handling ${[...new Set(current.errors)].join(', ')}: ` +
            (current.blamable.size === 0
              ? 'none of them is the fault of a disk (NO_DESCRIPTORS: the process ran out of file descriptors)'
              : `only ${[...current.blamable].join(', ')} failed on its own`),
    });
  }
}
