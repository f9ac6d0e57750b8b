import seedrandom from 'seedrandom';

/**
 * The faults the chaos soak injects (docs/chaos.md). Worker faults strike one worker; `master-restart` the master.
 * - `kill`: SIGKILL, down for the hold, started again on the same ports (its disk as it was);
 * - `restart-immediate`: SIGKILL and started again at once; `restart-graceful`: SIGTERM (a graceful exit, the
 *   recovery store kept), started again on the same ports;
 * - `stop-short` / `stop-past`: SIGSTOP for less than / more than the heartbeat timeout, then SIGCONT;
 * - `decommission`: a DecommissionThenIdle event through the master's `/api/v1`, Recommission after the hold;
 * - `master-restart`: the master SIGKILLed, down for the hold, started again on its port with its state;
 * - `disk-unwritable` / `disk-removed`: the worker's storage directory made read-only / removed, restored after;
 * - `latency`, `stall`, `one-way-stall`, `cut`: a network fault on every port of the worker (its fault proxies).
 */
export const FAULT_KINDS = [
  'kill',
  'restart-immediate',
  'restart-graceful',
  'stop-short',
  'stop-past',
  'decommission',
  'master-restart',
  'disk-unwritable',
  'disk-removed',
  'latency',
  'stall',
  'one-way-stall',
  'cut',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kinds that need fault proxies in front of the workers' ports. */
export const NETWORK_FAULTS: ReadonlySet<FaultKind> = new Set(['latency', 'stall', 'one-way-stall', 'cut']);

export interface ScheduledFault {
  /** Position in the schedule, from 0. */
  readonly index: number;
  readonly kind: FaultKind;
  /** When the fault is due, in ms from the soak's start (it starts later if the one before it is still running). */
  readonly atMs: number;
  /** How long the fault lasts before it is healed (the worker restarted, continued, the proxy healed, …). */
  readonly holdMs: number;
  /** Quiet time after the fault healed (however long that took) before the next fault of its lane may strike. */
  readonly settleMs: number;
  /** The worker struck (by index); absent for `master-restart`. */
  readonly worker?: number;
  /** `latency`: the added delay per direction; `one-way-stall`: the stalled direction. */
  readonly latencyMs?: number;
  readonly direction?: 'to-target' | 'to-client';
}

export interface ScheduleOptions {
  readonly seed: string;
  readonly durationMs: number;
  readonly workers: number;
  /** Copies of each partition: 2 when any job replicates, 1 otherwise. */
  readonly replicas: 1 | 2;
  /** `svc.master.heartbeat.worker.timeout`: stops short of it and past it are drawn around it. */
  readonly heartbeatTimeoutMs: number;
  /** The kinds to draw from (default every kind). */
  readonly kinds?: readonly FaultKind[];
  /** Quiet time after a fault healed before the next in its lane (default 3-10 s). */
  readonly settleMs?: readonly [number, number];
}

/**
 * How many faults the cluster tolerates at once: each partition has `replicas` copies, so one fewer workers may be
 * out, and a replicated shuffle still needs two workers in service for its revived copies. Never negative.
 */
export function toleratedFaults(workers: number, replicas: 1 | 2): number {
  return Math.max(0, Math.min(replicas - 1, workers - 2));
}

/**
 * The soak's fault schedule, drawn from `seed` alone: the same seed and options give the same list (the timing of
 * the run that follows it will differ). Faults run in `toleratedFaults` lanes, one after the other within a lane,
 * and no two lanes strike the same worker, or the master and a worker, at overlapping times.
 */
export function faultSchedule(options: ScheduleOptions): ScheduledFault[] {
  const kinds = options.kinds ?? FAULT_KINDS;
  const lanes = toleratedFaults(options.workers, options.replicas);
  if (lanes === 0 || kinds.length === 0) return [];
  const random = seedrandom.alea(`${options.seed}:faults`);
  const between = (low: number, high: number): number => Math.round(low + random() * (high - low));
  const [settleLow, settleHigh] = options.settleMs ?? [3_000, 10_000];
  const timeout = options.heartbeatTimeoutMs;
  const drawn: (ScheduledFault & { readonly endMs: number })[] = [];
  const laneFree = Array.from({ length: lanes }, () => between(2_000, 8_000));
  for (;;) {
    const lane = laneFree.indexOf(Math.min(...laneFree));
    const atMs = laneFree[lane]!;
    if (atMs >= options.durationMs) break;
    const kind = kinds[Math.floor(random() * kinds.length)]!;
    const holdMs = holdFor(kind, timeout, between);
    const endMs = atMs + holdMs;
    // Another lane's fault overlapping this one: strike a worker it leaves alone, and never beside the master's.
    const overlapping = drawn.filter((fault) => fault.atMs < endMs && atMs < fault.endMs);
    const busy = new Set(overlapping.map((fault) => fault.worker ?? -1));
    const free = Array.from({ length: options.workers }, (_, w) => w).filter((w) => !busy.has(w));
    const masterBusy = busy.has(-1);
    const workerDraw = Math.floor(random() * Math.max(1, free.length));
    if ((kind === 'master-restart' && overlapping.length > 0) || masterBusy || free.length === 0) {
      laneFree[lane] = atMs + between(settleLow, settleHigh);
      continue;
    }
    const settleMs = between(settleLow, settleHigh);
    const fault: ScheduledFault & { endMs: number } = {
      index: drawn.length,
      kind,
      atMs,
      holdMs,
      settleMs,
      endMs,
      ...(kind === 'master-restart' ? {} : { worker: free[workerDraw]! }),
      ...(kind === 'latency' ? { latencyMs: between(20, 400) } : {}),
      ...(kind === 'one-way-stall' ? { direction: random() < 0.5 ? 'to-target' : 'to-client' } : {}),
    };
    drawn.push(fault);
    laneFree[lane] = endMs + settleMs;
  }
  return drawn.map(({ endMs: _endMs, ...fault }) => fault);
}

function holdFor(kind: FaultKind, timeoutMs: number, between: (low: number, high: number) => number): number {
  switch (kind) {
    case 'restart-immediate':
    case 'restart-graceful':
      return 0;
    case 'stop-short':
      // Well short of the timeout: a worker that was only slow must never be declared lost.
      return between(Math.round(timeoutMs * 0.1), Math.round(timeoutMs * 0.4));
    case 'stop-past':
      // Past the timeout by a margin of heartbeats: the master must have declared it lost.
      return between(Math.round(timeoutMs * 1.5), Math.round(timeoutMs * 2.5));
    case 'master-restart':
      return between(200, 3_000);
    case 'cut':
      return between(500, 5_000);
    case 'stall':
    case 'one-way-stall':
      return between(1_000, Math.round(timeoutMs * 0.5));
    case 'kill':
    case 'decommission':
    case 'disk-unwritable':
    case 'disk-removed':
    case 'latency':
      return between(2_000, 12_000);
  }
}

/** Parses `--faults kill,stall,…`: every name must be a FaultKind. */
export function parseFaultKinds(text: string): FaultKind[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(FAULT_KINDS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new Error(`unknown fault kind(s) ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  return names as FaultKind[];
}
