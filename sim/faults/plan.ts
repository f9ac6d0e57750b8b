import type { Rng } from '../../core/rng.ts';
import { chance, exponential, logUniform, pick, uniform } from '../world/random.ts';

/**
 * The faults of one run, as data: the swarm's probabilistic rates (knobs) and a schedule of discrete faults (plan).
 * A seed draws both; a replay or a shrink passes them explicitly. Targets are topology tokens (`w3` the fourth
 * worker, `m0` the master, `a1` the second application with all its tasks, `a1.driver` its driver with the lifecycle
 * manager, `a1.executors` its tasks) so that a schedule stays readable and means the same thing in every run of the
 * same seed.
 */

/** Probabilistic faults, active from time 0 until `stormMs`; afterwards the network and disks are calm. */
export interface Knobs {
  readonly stormMs: number;
  readonly latencyMs: number;
  readonly jitterMs: number;
  readonly drop: number;
  readonly duplicate: number;
  readonly reorder: number;
  readonly ioError: number;
  readonly noSpace: number;
}

/**
 * What a disk fault window does: reads, writes or syncs fail; every write gets NO_SPACE; every operation is slow;
 * reads return the stored bytes with one byte garbled (a failing controller or cable: the stored copy is intact).
 */
export const DISK_FAULTS = [
  'write-errors',
  'read-errors',
  'sync-errors',
  'full',
  'slow',
  'corrupt-reads',
] as const;
export type DiskFault = (typeof DISK_FAULTS)[number];
/** The disk faults the swarm drew before reads could be corrupted (22 November 2026): older seeds replay with these. */
export const DISK_FAULTS_BEFORE_CORRUPTION: readonly DiskFault[] = DISK_FAULTS.filter(
  (fault) => fault !== 'corrupt-reads',
);

/** Worker events an operator sends through the master (Recommission ends each of them). */
export const WORKER_EVENTS = ['Decommission', 'DecommissionThenIdle', 'Graceful', 'Immediately'] as const;
export type WorkerEvent = (typeof WORKER_EVENTS)[number];

export type Fault =
  /** Power loss of a worker or master (`target`), restarted `downFor` ms later. */
  | { readonly kind: 'crash'; readonly at: number; readonly target: string; readonly downFor: number }
  /** An operator's graceful exit of a worker; the supervisor restarts it `downFor` ms after it exits. */
  | { readonly kind: 'graceful'; readonly at: number; readonly target: string; readonly downFor: number }
  /**
   * The listed groups are cut off for `duration` ms: from the groups of `otherSide` when it is given (every other
   * link stays up, so both sides still reach the rest of the cluster), from everything else when it is not.
   */
  | {
      readonly kind: 'partition';
      readonly at: number;
      readonly targets: readonly string[];
      readonly otherSide?: readonly string[];
      readonly duration: number;
    }
  /** A disk (`w3` + mount point) misbehaves for `duration` ms. */
  | {
      readonly kind: 'disk';
      readonly at: number;
      readonly target: string;
      readonly mount: string;
      readonly fault: DiskFault;
      readonly duration: number;
    }
  /** An operator excludes a worker at the master, and removes the exclusion `duration` ms later. */
  | { readonly kind: 'exclude'; readonly at: number; readonly target: string; readonly duration: number }
  /** An operator sends a worker event through the master, and a Recommission `duration` ms later. */
  | {
      readonly kind: 'event';
      readonly at: number;
      readonly target: string;
      readonly event: WorkerEvent;
      readonly duration: number;
    }
  /**
   * An executor of application `target` is lost: its running map attempt (`task` map) or reducer (reduce) with the
   * lowest id dies at once, mid-push or mid-read; the engine runs the task again, as a batch engine does.
   */
  | { readonly kind: 'kill'; readonly at: number; readonly target: string; readonly task: TaskKind }
  /**
   * The distributed filesystem misbehaves for `duration` ms, for every worker at once (a name-node outage, a quota
   * reached, a slow or corrupting data-node pipeline): the disk faults, on the tier every worker shares.
   */
  | { readonly kind: 'dfs'; readonly at: number; readonly fault: DiskFault; readonly duration: number }
  /**
   * A worker's process runs out of file descriptors for `duration` ms (EMFILE: a flood of connections, a leak):
   * every file operation it starts on its local disks and its share of the DFS fails with NO_DESCRIPTORS, while its
   * disks themselves are sound. Memory files need no descriptor and deletes none (sim/world/storage.ts).
   */
  | { readonly kind: 'descriptors'; readonly at: number; readonly target: string; readonly duration: number }
  /**
   * A one-way partition for `duration` ms: every message from the groups of `from` to those of `to` is lost without
   * a word, while messages the other way still arrive (a blackhole route on one side). An empty side is every other
   * group: `from` empty, the groups of `to` hear nothing; `to` empty, nothing the groups of `from` send arrives.
   */
  | {
      readonly kind: 'oneway';
      readonly at: number;
      readonly from: readonly string[];
      readonly to: readonly string[];
      readonly duration: number;
    };

export const TASK_KINDS = ['map', 'reduce'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export type FaultKind = Fault['kind'];

export interface Schedule {
  readonly knobs: Knobs;
  readonly faults: readonly Fault[];
}

/** What the fault plan may aim at in one run. */
export interface FaultTargets {
  readonly workers: readonly { readonly token: string; readonly mounts: readonly string[] }[];
  readonly masters: readonly string[];
  readonly apps: readonly string[];
  /** The disk faults to draw from; undefined: all of DISK_FAULTS. */
  readonly diskFaults?: readonly DiskFault[];
  /** Whether executors may be lost (kill faults); undefined: yes. */
  readonly taskKills?: boolean;
  /** Whether the cluster has a distributed filesystem; undefined: no. */
  readonly dfs?: boolean;
  /** Whether the plan may make the distributed filesystem fail (dfs faults), when there is one; undefined: yes. */
  readonly dfsFaults?: boolean;
  /**
   * Whether partitions may have two sides (some groups cut from some others, the rest of the cluster reaching both)
   * or split an application's driver from its executors; undefined: yes. Without, every partition cuts its groups
   * from everything else, as the swarm drew before 24 November 2026.
   */
  readonly partitionSides?: boolean;
  /**
   * Whether a worker's process may run out of file descriptors (descriptors faults); undefined: yes. Drawn after
   * everything else, so that without them a seed draws what it drew before 27 November 2026.
   */
  readonly descriptorFaults?: boolean;
  /**
   * Whether partitions may cut links one way only (oneway faults); undefined: yes. Drawn after everything else, so
   * that without them a seed draws what it drew before 29 November 2026.
   */
  readonly oneWayPartitions?: boolean;
  /**
   * The run loses exactly one worker (a crash, restarted later) between `from` and `to` ms, when maps push, and
   * nothing else goes wrong: the schedule replication must survive (workload/shape.ts, `oneWorkerLoss`).
   */
  readonly oneWorkerLoss?: { readonly from: number; readonly to: number };
  /**
   * The share of seeds whose network and disks are calm and that draw no fault; undefined: 0.15. The upgrade
   * scenarios draw more of them, since only there is the upgrade alone held to the liveness rule.
   */
  readonly calmShare?: number;
}

/** The groups a partition may name: each worker, each master, each application (with all its tasks). */
export function partitionGroups(targets: FaultTargets): string[] {
  return [...targets.workers.map((w) => w.token), ...targets.masters, ...targets.apps];
}

/** An application's driver (its lifecycle manager) or its executors (its map and reduce tasks), as a group. */
export const APP_PARTS = ['driver', 'executors'] as const;

export const CALM_KNOBS: Knobs = {
  stormMs: 0,
  latencyMs: 0.3,
  jitterMs: 0.2,
  drop: 0,
  duplicate: 0,
  reorder: 0,
  ioError: 0,
  noSpace: 0,
};

/**
 * Swarm testing: each seed switches every kind of fault on or off by a coin flip and draws its rate on a log
 * scale, so one seed is calm, another drops messages and fills disks, another only reorders. Bugs that one fault
 * masks (a drop hiding a reorder) are found by the seeds that leave it out.
 */
export function drawSchedule(rng: Rng, targets: FaultTargets): Schedule {
  if (targets.oneWorkerLoss !== undefined) return drawOneWorkerLoss(rng, targets, targets.oneWorkerLoss);
  const calm = chance(rng, targets.calmShare ?? 0.15);
  const knobs = drawKnobs(rng, calm);
  return { knobs, faults: calm ? [] : drawFaults(rng, knobs, targets) };
}

/** A calm network and disks, and one worker crashing inside `window` (restarted 50 ms to 30 s later). */
function drawOneWorkerLoss(
  rng: Rng,
  targets: FaultTargets,
  window: { readonly from: number; readonly to: number },
): Schedule {
  // A slow network (a loaded machine, a long link), so that pushes and their forwards to replicas are in flight when
  // the worker dies: with the swarm's sub-millisecond latency a crash almost always falls between two pushes.
  const knobs = { ...drawKnobs(rng, true), latencyMs: logUniform(rng, 2, 50) };
  const worker = pick(rng, targets.workers);
  const at = Math.round(uniform(rng, window.from, Math.max(window.from, window.to)));
  const downFor = Math.round(logUniform(rng, 50, 30_000));
  return { knobs, faults: [{ kind: 'crash', at, target: worker.token, downFor }] };
}

function drawKnobs(rng: Rng, calm: boolean): Knobs {
  const on = (p: number) => !calm && chance(rng, p);
  return {
    stormMs: Math.round(uniform(rng, 3_000, 40_000)),
    latencyMs: logUniform(rng, 0.05, 2),
    jitterMs: logUniform(rng, 0.01, 5),
    drop: on(0.35) ? logUniform(rng, 1e-4, 0.02) : 0,
    duplicate: on(0.35) ? logUniform(rng, 1e-4, 0.02) : 0,
    reorder: on(0.35) ? logUniform(rng, 1e-3, 0.2) : 0,
    ioError: on(0.3) ? logUniform(rng, 1e-5, 2e-3) : 0,
    noSpace: on(0.2) ? logUniform(rng, 1e-5, 1e-3) : 0,
  };
}

/**
 * Mean faults per minute of storm for each kind but the DFS's, the descriptors' and the one-way partitions' (drawn
 * after the rest), 0 when the swarm left the kind out.
 */
type Rates = Readonly<Record<Exclude<FaultKind, 'dfs' | 'descriptors' | 'oneway'>, number>>;

/** A kind's faults per minute: on with probability `p`, then log-uniform between `low` and `high`. */
function drawRate(rng: Rng, p: number, low: number, high: number): number {
  return chance(rng, p) ? logUniform(rng, low, high) : 0;
}

function drawRates(rng: Rng, targets: FaultTargets): Rates {
  const rate = (p: number, low: number, high: number) => drawRate(rng, p, low, high);
  return {
    crash: rate(0.45, 1, 12),
    graceful: rate(0.35, 1, 8),
    partition: rate(0.4, 1, 12),
    disk: rate(0.4, 2, 20),
    exclude: rate(0.25, 1, 8),
    event: rate(0.25, 1, 6),
    // Last, and not drawn at all without kills: the other kinds' draws stay those of older seeds.
    kill: targets.taskKills === false ? 0 : rate(0.3, 1, 10),
  };
}

/** Draws the schedule of discrete faults for one storm. */
function drawFaults(rng: Rng, knobs: Knobs, targets: FaultTargets): Fault[] {
  const rates = drawRates(rng, targets);
  const drawKind = (into: Fault[], kind: FaultKind, perMinute: number) => {
    if (perMinute <= 0 || knobs.stormMs <= 0) return;
    for (let at = exponential(rng, 1 / perMinute) * 60_000; at < knobs.stormMs;) {
      const fault = drawFault(rng, kind, Math.floor(at), targets);
      if (fault) into.push(fault);
      at += exponential(rng, 1 / perMinute) * 60_000;
    }
  };
  const faults: Fault[] = [];
  for (const kind of Object.keys(rates) as (keyof Rates)[]) drawKind(faults, kind, rates[kind]);
  // The DFS's faults come after every other kind's, and only with a DFS: what a seed drew before stays.
  if (targets.dfs === true && targets.dfsFaults !== false) drawKind(faults, 'dfs', drawRate(rng, 0.4, 1, 8));
  // The partitions' other sides after that, for the same reason.
  const sided = targets.partitionSides === false ? faults : withPartitionSides(rng, faults, targets);
  // A process out of descriptors last of all, for the same reason.
  const descriptors: Fault[] = [];
  if (targets.descriptorFaults !== false) drawKind(descriptors, 'descriptors', drawRate(rng, 0.3, 1, 8));
  // One-way partitions after that, for the same reason.
  const oneWay: Fault[] = [];
  if (targets.oneWayPartitions !== false) drawKind(oneWay, 'oneway', drawRate(rng, 0.3, 1, 10));
  return [...sided, ...descriptors, ...oneWay].sort((a, b) => a.at - b.at);
}

/**
 * Partitions between any sets of nodes, not only some groups against the rest: now and then a partition's groups
 * are cut from one to three other groups only (a switch between two racks fails, and both still reach the master),
 * or an application's driver is cut from its executors while both reach the workers (tasks that can push and fetch
 * but not report to their lifecycle manager). One decision per partition, in the order they were drawn.
 */
function withPartitionSides(rng: Rng, faults: readonly Fault[], targets: FaultTargets): Fault[] {
  const groups = partitionGroups(targets);
  return faults.map((fault) => {
    if (fault.kind !== 'partition') return fault;
    const roll = rng.next();
    if (roll < 0.15 && targets.apps.length > 0) {
      const app = pick(rng, targets.apps);
      return { ...fault, targets: [`${app}.driver`], otherSide: [`${app}.executors`] };
    }
    if (roll >= 0.55) return fault;
    const others = groups.filter((group) => !fault.targets.includes(group));
    if (others.length === 0) return fault;
    const size = 1 + Math.floor(rng.next() * Math.min(3, others.length));
    const chosen = new Set<string>();
    while (chosen.size < size) chosen.add(pick(rng, others));
    return { ...fault, otherSide: [...chosen] };
  });
}

function drawFault(rng: Rng, kind: FaultKind, at: number, targets: FaultTargets): Fault | undefined {
  const workers = targets.workers;
  if (workers.length === 0) return undefined;
  const worker = pick(rng, workers);
  switch (kind) {
    case 'crash': {
      const masterToo = targets.masters.length > 0 && chance(rng, 0.2);
      const target = masterToo ? pick(rng, targets.masters) : worker.token;
      return { kind, at, target, downFor: Math.round(logUniform(rng, 50, 30_000)) };
    }
    case 'graceful':
      return { kind, at, target: worker.token, downFor: Math.round(logUniform(rng, 50, 10_000)) };
    case 'partition': {
      const groups = [...workers.map((w) => w.token), ...targets.masters, ...targets.apps];
      const size = 1 + Math.floor(rng.next() * Math.min(3, groups.length - 1));
      const chosen = new Set<string>();
      while (chosen.size < size) chosen.add(pick(rng, groups));
      return { kind, at, targets: [...chosen], duration: Math.round(logUniform(rng, 100, 20_000)) };
    }
    case 'disk': {
      if (worker.mounts.length === 0) return undefined;
      return {
        kind,
        at,
        target: worker.token,
        mount: pick(rng, worker.mounts),
        fault: pick(rng, targets.diskFaults ?? DISK_FAULTS),
        duration: Math.round(logUniform(rng, 100, 30_000)),
      };
    }
    case 'exclude':
      return { kind, at, target: worker.token, duration: Math.round(logUniform(rng, 500, 30_000)) };
    case 'event':
      return {
        kind,
        at,
        target: worker.token,
        event: pick(rng, WORKER_EVENTS),
        duration: Math.round(logUniform(rng, 500, 30_000)),
      };
    case 'kill':
      if (targets.apps.length === 0) return undefined;
      return { kind, at, target: pick(rng, targets.apps), task: pick(rng, TASK_KINDS) };
    case 'dfs':
      return {
        kind,
        at,
        fault: pick(rng, targets.diskFaults ?? DISK_FAULTS),
        duration: Math.round(logUniform(rng, 100, 30_000)),
      };
    case 'descriptors':
      return { kind, at, target: worker.token, duration: Math.round(logUniform(rng, 100, 20_000)) };
    case 'oneway':
      return {
        kind,
        at,
        ...drawOneWaySides(rng, partitionGroups(targets)),
        duration: Math.round(logUniform(rng, 100, 20_000)),
      };
  }
}

/**
 * The sides of a one-way partition: a group that is heard but hears nobody, or is heard by nobody but hears
 * everyone (a blackhole route on the group's own host: to it, or from it), or one or two groups whose messages to
 * one or two others are lost (a route missing between two hosts, the other way still up).
 */
function drawOneWaySides(
  rng: Rng,
  groups: readonly string[],
): { readonly from: readonly string[]; readonly to: readonly string[] } {
  const roll = rng.next();
  const first = pick(rng, groups);
  if (roll < 0.25 || groups.length < 2) return { from: [first], to: [] };
  if (roll < 0.5) return { from: [], to: [first] };
  const from = new Set([first]);
  if (groups.length > 2 && chance(rng, 0.3)) from.add(pick(rng, groups));
  const others = groups.filter((group) => !from.has(group));
  const to = new Set([pick(rng, others)]);
  if (others.length > 1 && chance(rng, 0.3)) to.add(pick(rng, others));
  return { from: [...from], to: [...to] };
}

/** When the last fault of the schedule is over: from then on the run must make progress (liveness). */
export function calmFrom(schedule: Schedule): number {
  let end = schedule.knobs.stormMs;
  for (const fault of schedule.faults) end = Math.max(end, faultEnd(fault));
  return end;
}

export function faultEnd(fault: Fault): number {
  switch (fault.kind) {
    case 'crash':
    case 'graceful':
      return fault.at + fault.downFor;
    case 'partition':
    case 'disk':
    case 'exclude':
    case 'event':
    case 'dfs':
    case 'descriptors':
    case 'oneway':
      return fault.at + fault.duration;
    case 'kill':
      return fault.at;
  }
}

// ------------------------------------------------------------------------------------------- text form

/**
 * `crash(w3)@1200+3000; partition(w1,a0)@500+2000; partition(w1,w2|m0)@700+300; disk(w4,/mnt/d1,full)@100+900;
 * dfs(slow)@0+500; descriptors(w2)@300+4000; oneway(w1>m0)@900+2000`: one fault per clause (a partition's `|`
 * separates its two sides; a one-way partition's `>` points from the side whose messages are lost, an empty side
 * being every other group: `oneway(w1>)`, `oneway(>w1)`).
 */
export function formatFaults(faults: readonly Fault[]): string {
  return faults.map(formatFault).join('; ');
}

function formatFault(fault: Fault): string {
  switch (fault.kind) {
    case 'crash':
    case 'graceful':
      return `${fault.kind}(${fault.target})@${fault.at}+${fault.downFor}`;
    case 'partition': {
      const other = fault.otherSide === undefined ? '' : `|${fault.otherSide.join(',')}`;
      return `partition(${fault.targets.join(',')}${other})@${fault.at}+${fault.duration}`;
    }
    case 'disk':
      return `disk(${fault.target},${fault.mount},${fault.fault})@${fault.at}+${fault.duration}`;
    case 'exclude':
    case 'descriptors':
      return `${fault.kind}(${fault.target})@${fault.at}+${fault.duration}`;
    case 'event':
      return `event(${fault.target},${fault.event})@${fault.at}+${fault.duration}`;
    case 'kill':
      return `kill(${fault.target},${fault.task})@${fault.at}+0`;
    case 'dfs':
      return `dfs(${fault.fault})@${fault.at}+${fault.duration}`;
    case 'oneway':
      return `oneway(${fault.from.join(',')}>${fault.to.join(',')})@${fault.at}+${fault.duration}`;
  }
}

const CLAUSE = /^([a-z]+)\(([^)]*)\)@(\d+)\+(\d+)$/;

export function parseFaults(text: string): Fault[] {
  return text
    .split(';')
    .map((clause) => clause.trim())
    .filter((clause) => clause.length > 0)
    .map((clause) => {
      const match = CLAUSE.exec(clause);
      if (!match) {
        throw new RangeError(
          `'${clause}' is not a fault; expected kind(args)@atMs+durationMs, for example crash(w3)@1200+3000`,
        );
      }
      const [, kind, argText, atText, lengthText] = match as unknown as [
        string,
        string,
        string,
        string,
        string,
      ];
      const args = argText.split(',').map((arg) => arg.trim());
      const at = Number(atText);
      const length = Number(lengthText);
      const one = () => {
        if (args.length !== 1 || !args[0])
          throw new RangeError(`'${clause}': ${kind} takes exactly one target`);
        return args[0];
      };
      switch (kind) {
        case 'crash':
        case 'graceful':
          return { kind, at, target: one(), downFor: length };
        case 'exclude':
        case 'descriptors':
          return { kind, at, target: one(), duration: length };
        case 'partition': {
          const sides = argText.split('|').map((side) => side.split(',').map((arg) => arg.trim()));
          if (sides.length > 2 || sides.some((side) => side.some((arg) => arg.length === 0)))
            throw new RangeError(
              `'${clause}': expected partition(groups) or partition(groups|groups), groups separated by commas`,
            );
          const [targets, otherSide] = sides as [string[], string[] | undefined];
          const shared = targets.filter(
            (group) => otherSide?.some((other) => groupsOverlap(group, other)) === true,
          );
          if (shared.length > 0)
            throw new RangeError(`'${clause}': ${shared.join(', ')} cannot be on both sides of a partition`);
          return {
            kind,
            at,
            targets,
            ...(otherSide === undefined ? {} : { otherSide }),
            duration: length,
          };
        }
        case 'oneway': {
          const sides = argText.split('>').map((side) =>
            side
              .split(',')
              .map((arg) => arg.trim())
              .filter((arg) => arg.length > 0),
          );
          if (sides.length !== 2 || (sides[0]!.length === 0 && sides[1]!.length === 0))
            throw new RangeError(
              `'${clause}': expected oneway(groups>groups), oneway(groups>) or oneway(>groups), groups separated by commas`,
            );
          const [from, to] = sides as [string[], string[]];
          const shared = from.filter((group) => to.some((other) => groupsOverlap(group, other)));
          if (shared.length > 0)
            throw new RangeError(`'${clause}': ${shared.join(', ')} cannot be on both sides of a partition`);
          return { kind, at, from, to, duration: length };
        }
        case 'dfs': {
          const [fault] = args;
          if (args.length !== 1 || !(DISK_FAULTS as readonly string[]).includes(fault ?? '')) {
            throw new RangeError(
              `'${clause}': expected dfs(fault) with fault one of ${DISK_FAULTS.join(', ')}`,
            );
          }
          return { kind, at, fault: fault as DiskFault, duration: length };
        }
        case 'disk': {
          const [target, mount, fault] = args;
          if (
            args.length !== 3 ||
            !target ||
            !mount ||
            !(DISK_FAULTS as readonly string[]).includes(fault ?? '')
          ) {
            throw new RangeError(
              `'${clause}': expected disk(worker,mount,fault) with fault one of ${DISK_FAULTS.join(', ')}`,
            );
          }
          return { kind, at, target, mount, fault: fault as DiskFault, duration: length };
        }
        case 'event': {
          const [target, event] = args;
          if (args.length !== 2 || !target || !(WORKER_EVENTS as readonly string[]).includes(event ?? '')) {
            throw new RangeError(
              `'${clause}': expected event(worker,type) with type one of ${WORKER_EVENTS.join(', ')}`,
            );
          }
          return { kind, at, target, event: event as WorkerEvent, duration: length };
        }
        case 'kill': {
          const [target, task] = args;
          if (args.length !== 2 || !target || !(TASK_KINDS as readonly string[]).includes(task ?? '')) {
            throw new RangeError(
              `'${clause}': expected kill(app,task) with task one of ${TASK_KINDS.join(', ')}`,
            );
          }
          return { kind, at, target, task: task as TaskKind };
        }
        default:
          throw new RangeError(
            `'${clause}': unknown fault kind '${kind}'; expected crash, graceful, partition, oneway, disk, dfs, exclude, event, kill or descriptors`,
          );
      }
    });
}

/**
 * A group is on both sides when it is named on both, or when one side names an application and the other one of its
 * parts (a0 and a0.driver).
 */
function groupsOverlap(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/**
 * Refuses a schedule that names what this seed's cluster does not have (a typo in a replayed schedule would
 * otherwise be a fault that silently never happens): workers, masters and applications by token, a worker's disks
 * by mount point.
 */
export function checkScheduleTargets(faults: readonly Fault[], targets: FaultTargets): void {
  const workers = new Map(targets.workers.map((w) => [w.token, w.mounts]));
  const groups = new Set(partitionGroups(targets));
  for (const app of targets.apps) for (const part of APP_PARTS) groups.add(`${app}.${part}`);
  const known =
    `workers ${[...workers.keys()].join(', ') || '(none)'}, masters ${targets.masters.join(', ') || '(none)'}, ` +
    `applications ${targets.apps.join(', ') || '(none)'} (each also as <app>.driver and <app>.executors)`;
  const refuse = (fault: Fault, what: string) => {
    throw new RangeError(`'${formatFault(fault)}': ${what}; this seed's cluster has ${known}`);
  };
  for (const fault of faults) {
    switch (fault.kind) {
      case 'crash':
        if (!workers.has(fault.target) && !targets.masters.includes(fault.target))
          refuse(fault, `no worker or master ${fault.target}`);
        break;
      case 'graceful':
      case 'exclude':
      case 'event':
      case 'descriptors':
        if (!workers.has(fault.target)) refuse(fault, `no worker ${fault.target}`);
        break;
      case 'disk': {
        const mounts = workers.get(fault.target);
        if (mounts === undefined) refuse(fault, `no worker ${fault.target}`);
        else if (!mounts.includes(fault.mount))
          refuse(
            fault,
            `worker ${fault.target} has no disk ${fault.mount} (it has ${mounts.join(', ') || 'none'})`,
          );
        break;
      }
      case 'kill':
        if (!targets.apps.includes(fault.target)) refuse(fault, `no application ${fault.target}`);
        break;
      case 'partition':
        for (const group of [...fault.targets, ...(fault.otherSide ?? [])]) {
          if (!groups.has(group)) refuse(fault, `no group ${group} to partition`);
        }
        break;
      case 'oneway':
        for (const group of [...fault.from, ...fault.to]) {
          if (!groups.has(group)) refuse(fault, `no group ${group} to partition`);
        }
        break;
      case 'dfs':
        if (targets.dfs !== true) refuse(fault, 'no distributed filesystem');
        break;
    }
  }
}

const KNOB_NAMES: Readonly<Record<keyof Knobs, string>> = {
  stormMs: 'storm',
  latencyMs: 'latency',
  jitterMs: 'jitter',
  drop: 'drop',
  duplicate: 'dup',
  reorder: 'reorder',
  ioError: 'ioError',
  noSpace: 'noSpace',
};

/** `storm=60000,latency=0.3,...`: every knob, with enough digits to replay the exact run. */
export function formatKnobs(knobs: Knobs): string {
  return (Object.keys(KNOB_NAMES) as (keyof Knobs)[])
    .map((key) => `${KNOB_NAMES[key]}=${knobs[key]}`)
    .join(',');
}

/** Parses knobs text; knobs it does not name keep the values of `base`. */
export function parseKnobs(text: string, base: Knobs = CALM_KNOBS): Knobs {
  const byName = new Map(Object.entries(KNOB_NAMES).map(([key, name]) => [name, key as keyof Knobs]));
  const knobs: Record<keyof Knobs, number> = { ...base };
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)) {
    const [name, value] = pair.split('=');
    const key = byName.get(name?.trim() ?? '');
    const number = Number(value);
    if (key === undefined) {
      throw new RangeError(`'${name}' is not a knob; expected one of ${[...byName.keys()].join(', ')}`);
    }
    if (value === undefined || value.trim() === '' || !Number.isFinite(number) || number < 0) {
      throw new RangeError(`knob ${name} needs a non-negative number, got '${value ?? ''}'`);
    }
    knobs[key] = number;
  }
  return knobs;
}
