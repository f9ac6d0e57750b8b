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
 * - `latency`, `stall`, `one-way-stall`, `cut`: a network fault on every port of the worker (its fault proxies);
 * - on namespace hosts (`--hosts`, runtime/cluster/hosts.ts) instead: `link-cut` (the worker's link down, nobody
 *   reaches it and it reaches nobody), `one-way-partition` (a blackhole route: what the worker sends is dropped, or
 *   what is sent to it) and `rack-partition` (a group of workers cut off from the master, the applications and the
 *   other workers, both ways), each healed after its hold;
 * - with a group of masters (`--ha`) instead of `master-restart`: `leader-kill` (the leader SIGKILLed, its supervisor
 *   restarts it), `leader-freeze` (SIGSTOP until another master leads, then held a little longer, then SIGCONT: it
 *   must step down and exit) and, on namespace hosts, `leader-partition` (the leader's host link down until it
 *   stepped down and another leads, held a little longer, then healed). Their hold is what they last past the
 *   successor's election: the election itself is waited for, never timed.
 */
export const LOOPBACK_FAULT_KINDS = [
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

/** The faults of a real network, which only a cluster on namespace hosts has. */
export const HOST_FAULT_KINDS = ['link-cut', 'one-way-partition', 'rack-partition'] as const;

/** The faults of a group of masters (`--ha`), each struck at the master leading when it is due. */
export const LEADER_FAULT_KINDS = ['leader-kill', 'leader-freeze', 'leader-partition'] as const;

export const FAULT_KINDS = [...LOOPBACK_FAULT_KINDS, ...HOST_FAULT_KINDS, ...LEADER_FAULT_KINDS] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kinds that need fault proxies in front of the workers' ports (a cluster on loopback). */
export const NETWORK_FAULTS: ReadonlySet<FaultKind> = new Set(['latency', 'stall', 'one-way-stall', 'cut']);

/** The kinds that need namespace hosts. */
export const HOST_FAULTS: ReadonlySet<FaultKind> = new Set([...HOST_FAULT_KINDS, 'leader-partition']);

/** The kinds that need a group of masters. */
export const LEADER_FAULTS: ReadonlySet<FaultKind> = new Set(LEADER_FAULT_KINDS);

/** The kinds that strike a master rather than a worker (a scheduled fault without `worker`). */
export const MASTER_FAULTS: ReadonlySet<FaultKind> = new Set(['master-restart', ...LEADER_FAULT_KINDS]);

/**
 * The kinds a soak draws from by default: on loopback every kind but the hosts' (the same list, and so the same
 * schedules, as before hosts existed); on namespace hosts every kind but the fault proxies'. With a group of masters
 * (`ha`) the leader's faults take the place of `master-restart` (a group has no single master to restart), appended
 * so that the worker kinds keep their places.
 */
export function defaultFaultKinds(hosts: boolean, ha = false): readonly FaultKind[] {
  const single = hosts
    ? FAULT_KINDS.filter((kind) => !NETWORK_FAULTS.has(kind) && !LEADER_FAULTS.has(kind))
    : LOOPBACK_FAULT_KINDS;
  if (!ha) return single;
  return [
    ...single.filter((kind) => kind !== 'master-restart'),
    ...LEADER_FAULT_KINDS.filter((kind) => hosts || !HOST_FAULTS.has(kind)),
  ];
}

/**
 * Why `kinds` cannot be injected into a cluster on loopback (`hosts` false) or on namespace hosts, with one master or
 * a group (`ha`); undefined: they can.
 */
export function unsupportedKinds(
  kinds: readonly FaultKind[],
  hosts: boolean,
  ha = false,
): string | undefined {
  const needs = (wrong: readonly FaultKind[]): string =>
    `${wrong.join(', ')} ${wrong.length === 1 ? 'needs' : 'need'}`;
  const network = kinds.filter((kind) => (hosts ? NETWORK_FAULTS : HOST_FAULTS).has(kind));
  if (network.length > 0)
    return hosts
      ? `${needs(network)} fault proxies, which a cluster on namespace hosts does not have (drop --hosts)`
      : `${needs(network)} namespace hosts (--hosts)`;
  const leader = kinds.filter((kind) => LEADER_FAULTS.has(kind));
  if (!ha && leader.length > 0) return `${needs(leader)} a group of masters (--ha)`;
  if (ha && kinds.includes('master-restart'))
    return 'master-restart needs a single master; a group of masters (--ha) has leader-kill instead';
  return undefined;
}

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
  /** The worker struck (by index); absent for the master's faults (MASTER_FAULTS). */
  readonly worker?: number;
  /** `latency`: the added delay per direction; `one-way-stall`: the stalled direction. */
  readonly latencyMs?: number;
  readonly direction?: 'to-target' | 'to-client';
  /** `one-way-partition`: what is dropped, what the worker sends or what is sent to it. */
  readonly drop?: 'from-worker' | 'to-worker';
  /** `rack-partition`: every worker of the group cut off (`worker` is one of them). */
  readonly rack?: readonly number[];
}

/** Every worker a fault strikes. */
export function struckWorkers(fault: ScheduledFault): readonly number[] {
  return fault.rack ?? (fault.worker === undefined ? [] : [fault.worker]);
}

export interface ScheduleOptions {
  readonly seed: string;
  readonly durationMs: number;
  readonly workers: number;
  /** Copies of each partition: 2 when any job replicates, 1 otherwise. */
  readonly replicas: 1 | 2;
  /** `svc.master.heartbeat.worker.timeout`: stops short of it and past it are drawn around it. */
  readonly heartbeatTimeoutMs: number;
  /** The kinds to draw from (default: defaultFaultKinds(hosts)). */
  readonly kinds?: readonly FaultKind[];
  /** The cluster runs on namespace hosts: its faults are the hosts' network faults, not the fault proxies'. */
  readonly hosts?: boolean;
  /** The cluster's masters are a group (`--ha`): the leader's faults replace `master-restart`. */
  readonly ha?: boolean;
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
  const hosts = options.hosts ?? false;
  const ha = options.ha ?? false;
  const kinds = options.kinds ?? defaultFaultKinds(hosts, ha);
  const unsupported = unsupportedKinds(kinds, hosts, ha);
  if (unsupported !== undefined) throw new Error(unsupported);
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
    const busy = new Set(
      overlapping.flatMap((fault) => (fault.worker === undefined ? [-1] : struckWorkers(fault))),
    );
    const free = Array.from({ length: options.workers }, (_, w) => w).filter((w) => !busy.has(w));
    const masterBusy = busy.has(-1);
    const workerDraw = Math.floor(random() * Math.max(1, free.length));
    const onMaster = MASTER_FAULTS.has(kind);
    if ((onMaster && overlapping.length > 0) || masterBusy || free.length === 0) {
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
      ...(onMaster ? {} : { worker: free[workerDraw]! }),
      ...(kind === 'latency' ? { latencyMs: between(20, 400) } : {}),
      ...(kind === 'one-way-stall' ? { direction: random() < 0.5 ? 'to-target' : 'to-client' } : {}),
      ...(kind === 'one-way-partition' ? { drop: random() < 0.5 ? 'from-worker' : 'to-worker' } : {}),
      ...(kind === 'rack-partition'
        ? { rack: drawRack(free, free[workerDraw]!, options.workers, random) }
        : {}),
    };
    drawn.push(fault);
    laneFree[lane] = endMs + settleMs;
  }
  return drawn.map(({ endMs: _endMs, ...fault }) => fault);
}

/**
 * The group a rack partition cuts off: `first` and up to all but one worker more of `free`, so that the master and
 * the applications keep at least one worker on their side (a group of one is a single worker's loss, which a
 * replicated job survives; a larger one is not, unless replicas are placed on other racks).
 */
function drawRack(free: readonly number[], first: number, workers: number, random: () => number): number[] {
  const others = free.filter((w) => w !== first);
  const size = 1 + Math.floor(random() * Math.min(others.length + 1, workers - 1));
  const rack = [first];
  while (rack.length < size) {
    const pick = others.splice(Math.floor(random() * others.length), 1)[0]!;
    rack.push(pick);
  }
  return rack.sort((a, b) => a - b);
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
    case 'leader-kill':
      // Restarted by its supervisor at once: the hold is nothing of the soak's.
      return 0;
    case 'leader-freeze':
      // Held this long past the moment another master leads (the election is waited for): resumed, it must find its
      // deadline long gone and step down at its first step.
      return between(0, 5_000);
    case 'leader-partition':
      // Held this long past the moment the cut leader stepped down and another leads: the workers and applications
      // cut off from it in between must have followed the new leader.
      return between(1_000, 15_000);
    case 'cut':
      return between(500, 5_000);
    case 'stall':
    case 'one-way-stall':
      return between(1_000, Math.round(timeoutMs * 0.5));
    case 'link-cut':
    case 'one-way-partition':
    case 'rack-partition':
      // Short of the heartbeat timeout (only the peers' silence watch sees it) and past it (the master declares the
      // workers lost, and they must register again after the heal).
      return between(1_000, Math.round(timeoutMs * 2.5));
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
