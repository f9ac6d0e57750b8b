import type { FileRef, IoError } from '../effects.ts';
import { log, setEntry, setTimer, type Outbox } from '../outbox.ts';
import type { WorkerMachineState } from './state.ts';

/**
 * The disk monitor (reference: `svc.worker.monitor.disk.check.interval`, 30 s from 0.3.1). A disk marked failed
 * after an I/O error would otherwise stay failed until the worker restarts, and the master would keep the worker
 * excluded: transient faults would shrink the cluster for good. Every interval each failed local disk is probed
 * with a tiny file (create, write, flush, delete); when the whole probe succeeds the disk is HEALTHY again, the next
 * heartbeat says so, and the master lifts its exclusion.
 *
 * Probe I/O uses negative op numbers (-(3 × disk index + stage + 1)), a range the worker's own op counter never
 * reaches: the probe needs no state of its own, and a probe still in flight when the next round starts only repeats
 * the same harmless steps.
 */
export const DISK_CHECK_TIMER = 'disk:check';

const PROBE_FILE_ID = '.svc-disk-probe';
const PROBE_BYTES = new Uint8Array([0x73, 0x76, 0x63, 0x0a]);
const STAGES = ['create', 'write', 'flush'] as const;
type Stage = (typeof STAGES)[number];

/** Arms the first check (at start); does nothing when the monitor is off. */
export function armDiskCheck(s: WorkerMachineState, out: Outbox): void {
  const interval = s.config.diskCheckIntervalMs;
  if (interval !== undefined) setTimer(out, DISK_CHECK_TIMER, out.now + interval);
}

/** The check timer: probe every failed disk, then arm the next check. */
export function onDiskCheckTimer(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  armDiskCheck(s, out);
  // A probe file left behind by an earlier round would make the create fail with EXISTS: every delete goes first,
  // so that the creates, handed to the disks as one batch (io-batch.ts), all come after them.
  for (const disk of s.config.disks) {
    if (s.diskProblems.has(disk.mountPoint))
      out.effects.push({ kind: 'deleteFile', file: probeFile(disk.mountPoint, disk.type) });
  }
  s.config.disks.forEach((disk, index) => {
    if (!s.diskProblems.has(disk.mountPoint)) return;
    out.effects.push({
      kind: 'createFile',
      op: probeOp(index, 'create'),
      file: probeFile(disk.mountPoint, disk.type),
    });
  });
  return s;
}

/** Whether an op number belongs to a disk probe (see the module comment). */
export function isProbeOp(op: number): boolean {
  return op < 0;
}

/** A probe step completed (`error` undefined) or failed. */
export function onProbeIo(
  s: WorkerMachineState,
  out: Outbox,
  op: number,
  error: IoError | undefined,
): WorkerMachineState {
  const index = Math.floor((-op - 1) / 3);
  const stage = STAGES[(-op - 1) % 3];
  const disk = s.config.disks[index];
  if (disk === undefined || stage === undefined) {
    log(out, 'warn', 'worker.disk.unknownProbe', { op });
    return s;
  }
  const file = probeFile(disk.mountPoint, disk.type);
  if (error !== undefined) {
    log(out, 'warn', 'worker.disk.probeFailed', {
      disk: disk.mountPoint,
      stage,
      error,
      problem: s.diskProblems.get(disk.mountPoint),
      note: `the disk stays out of use; it is probed again in ${s.config.diskCheckIntervalMs} ms`,
    });
    return s;
  }
  if (stage === 'create') {
    out.effects.push({ kind: 'write', op: probeOp(index, 'write'), file, bytes: PROBE_BYTES });
    return s;
  }
  if (stage === 'write') {
    out.effects.push({ kind: 'flush', op: probeOp(index, 'flush'), file });
    return s;
  }
  out.effects.push({ kind: 'deleteFile', file });
  const problem = s.diskProblems.get(disk.mountPoint);
  if (problem === undefined) return s;
  log(out, 'info', 'worker.disk.recovered', { disk: disk.mountPoint, was: problem });
  return { ...s, diskProblems: setEntry(s.diskProblems, disk.mountPoint, undefined) };
}

function probeOp(diskIndex: number, stage: Stage): number {
  return -(diskIndex * 3 + STAGES.indexOf(stage) + 1);
}

function probeFile(mountPoint: string, type: 'HDD' | 'SSD'): FileRef {
  return { id: PROBE_FILE_ID, tier: type, mountPoint };
}
