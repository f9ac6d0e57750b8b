import type { Input, NodeId } from '../../core/machines/effects.ts';
import type { DiskFaults } from '../world/storage.ts';
import type { Observer, World } from '../world/world.ts';
import type { DiskFault, Fault, Knobs, Schedule, TaskKind } from './plan.ts';

/** How the tokens of a schedule map onto the nodes of one world (the scenario provides it). */
export interface FaultTopology {
  /** The node of a worker or master token (`w3`, `m0`). */
  node(token: string): NodeId | undefined;
  /**
   * Membership of a token's group for partitions: one server, an application with all its tasks, or one part of an
   * application (`a0.driver`, `a0.executors`).
   */
  group(token: string): ((node: NodeId) => boolean) | undefined;
  /** The master that takes operator commands: one node, or a group's leader now (undefined: none leads). */
  readonly master: NodeId | (() => NodeId | undefined);
  /** Nodes a supervisor restarts when they exit (workers and masters, never tasks). */
  readonly supervised: ReadonlySet<NodeId>;
  /** How long the supervisor waits before restarting a process that exited on its own. */
  readonly supervisorDelayMs: number;
  /** Loses the executor running a task of an application (the compute engine decides which and reruns it). */
  killTask(world: World, appToken: string, task: TaskKind): void;
}

const SLOW_DISK_FACTOR = 25;
/** How often an operator tries again a command the master was down for. */
const OPERATOR_RETRY_MS = 1_000;

type OperatorCommand = Extract<Input, { kind: 'admin' }>;

/**
 * The operator at the management interface: commands reach the master in the order they were given; one the
 * master is down for is tried again every second until it is taken, as a person or a script retries a refused
 * request. (Dropping it instead left an exclusion in place forever once its lift met a master restart: seed 5846.)
 */
function operatorConsole(master: NodeId | (() => NodeId | undefined)) {
  const queue: OperatorCommand[] = [];
  /**
   * A group's leader may take a command and be deposed before it answers (its write's outcome unknown): the
   * operator, who got no answer, asks the next leader again. Commands a member took and has not answered yet.
   */
  const unanswered = new Map<NodeId, OperatorCommand[]>();
  /**
   * In a group the operator gives the next command only once the last was answered, as a person or a script waits
   * for the answer: a command lost with its member is asked again before any later one, so the master takes them in
   * the order given. (Sending on regardless let an exclusion, lost with a frozen leader, reach the next leader after
   * its own lift and exclude the worker for good: seed 135234.)
   */
  const awaiting = (): boolean => {
    for (const commands of unanswered.values()) if (commands.length > 0) return true;
    return false;
  };
  let retrying = false;
  const drain = (w: World): void => {
    for (;;) {
      const target = typeof master === 'string' ? master : master();
      if (queue.length === 0 || target === undefined || !w.isUp(target)) break;
      if (awaiting()) break; // only a group's commands are awaited (`unanswered`)
      const command = queue.shift()!;
      if (typeof master !== 'string') unanswered.set(target, [...(unanswered.get(target) ?? []), command]);
      w.inject(target, command);
    }
    if (queue.length === 0 || retrying) return;
    retrying = true;
    w.schedule(w.now + OPERATOR_RETRY_MS, 'operator retries: the master was down', (later) => {
      retrying = false;
      drain(later);
    });
  };
  return {
    submit(w: World, command: OperatorCommand): void {
      queue.push(command);
      drain(w);
    },
    answered(w: World, node: NodeId): void {
      unanswered.get(node)?.shift();
      drain(w);
    },
    ended(w: World, node: NodeId): void {
      const lost = unanswered.get(node) ?? [];
      unanswered.delete(node);
      if (lost.length === 0) return;
      queue.unshift(...lost);
      drain(w);
    },
  };
}

/**
 * Turns a schedule into world actions: probabilistic rates for the storm and calm afterwards, each discrete fault
 * at its time and its repair at its end. Returns the observer that plays the supervisor (restarting servers that
 * exited) so the caller can register it. Overlapping windows of the same disk fault nest (a counter per switch),
 * and a fault aimed at a node that is already down is skipped rather than stacked.
 */
export function injectSchedule(world: World, schedule: Schedule, topology: FaultTopology): Observer {
  const stormy = stormRates(schedule.knobs);
  world.network.setRates(stormy.network);
  world.setIoRates(stormy.io);
  world.schedule(schedule.knobs.stormMs, 'storm ends: network and disks calm', (w) => {
    w.network.setRates({ ...stormy.network, drop: 0, duplicate: 0, reorder: 0 });
    w.setIoRates({ ioError: 0, noSpace: 0 });
  });

  const restartDelay = new Map<NodeId, number>();
  const diskSwitches = new Map<string, number>();
  const operator = operatorConsole(topology.master);

  const restart = (node: NodeId) => (w: World) => {
    if (!w.isUp(node)) w.start(node);
  };

  const side = (tokens: readonly string[]) => {
    const groups = tokens.map((token) => topology.group(token)).filter((g) => g !== undefined);
    return groups.length === 0 ? undefined : (node: NodeId) => groups.some((member) => member(node));
  };

  for (const fault of schedule.faults) {
    const label = describeFault(fault);
    switch (fault.kind) {
      case 'crash': {
        const node = topology.node(fault.target);
        if (node === undefined) break;
        world.schedule(fault.at, label, (w) => {
          if (!w.isUp(node)) return;
          w.crash(node);
          w.schedule(w.now + fault.downFor, `restart ${fault.target} after crash`, restart(node));
        });
        break;
      }
      case 'graceful': {
        const node = topology.node(fault.target);
        if (node === undefined) break;
        world.schedule(fault.at, label, (w) => {
          if (!w.isUp(node)) return;
          restartDelay.set(node, fault.downFor);
          w.inject(node, { kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
        });
        break;
      }
      case 'partition': {
        const inside = side(fault.targets);
        const other = fault.otherSide === undefined ? 'rest' : side(fault.otherSide);
        if (inside === undefined || other === undefined) break;
        world.schedule(fault.at, label, (w) => {
          const id = w.network.partition(inside, other);
          w.schedule(w.now + fault.duration, `heal ${label}`, (later) => later.network.heal(id));
        });
        break;
      }
      case 'oneway': {
        const from = fault.from.length === 0 ? 'rest' : side(fault.from);
        const to = fault.to.length === 0 ? 'rest' : side(fault.to);
        if (from === undefined || to === undefined || (from === 'rest' && to === 'rest')) break;
        world.schedule(fault.at, label, (w) => {
          const id = w.network.dropFromTo(from, to);
          w.schedule(w.now + fault.duration, `heal ${label}`, (later) => later.network.heal(id));
        });
        break;
      }
      case 'disk': {
        const node = topology.node(fault.target);
        const faults = node === undefined ? undefined : world.storageOf(node)?.faultsOf(fault.mount);
        if (faults === undefined) break;
        switchWindow(world, diskSwitches, faults, `${node}|${fault.mount}|${fault.fault}`, fault, label);
        break;
      }
      case 'exclude': {
        const node = topology.node(fault.target);
        if (node === undefined) break;
        const command = (add: string[], remove: string[]) => ({
          kind: 'admin' as const,
          command: { type: 'excludeWorkers' as const, add, remove },
        });
        world.schedule(fault.at, label, (w) => operator.submit(w, command([node], [])));
        world.schedule(fault.at + fault.duration, `lift ${label}`, (w) =>
          operator.submit(w, command([], [node])),
        );
        break;
      }
      case 'event': {
        const node = topology.node(fault.target);
        if (node === undefined) break;
        const command = (eventType: string) => ({
          kind: 'admin' as const,
          command: { type: 'workerEvent' as const, eventType, workers: [node] },
        });
        world.schedule(fault.at, label, (w) => operator.submit(w, command(fault.event)));
        world.schedule(fault.at + fault.duration, `end ${label}`, (w) =>
          operator.submit(w, command('Recommission')),
        );
        break;
      }
      case 'kill':
        world.schedule(fault.at, label, (w) => topology.killTask(w, fault.target, fault.task));
        break;
      case 'dfs':
        switchWindow(world, diskSwitches, world.dfsFaults(), `dfs|${fault.fault}`, fault, label);
        break;
      case 'descriptors': {
        const node = topology.node(fault.target);
        const storage = node === undefined ? undefined : world.storageOf(node);
        if (storage === undefined) break;
        // Counted like a disk switch: overlapping windows end with the last of them.
        const key = `${node}|descriptors`;
        world.schedule(fault.at, label, () => {
          diskSwitches.set(key, (diskSwitches.get(key) ?? 0) + 1);
          storage.outOfDescriptors = true;
        });
        world.schedule(fault.at + fault.duration, `end ${label}`, () => {
          const left = (diskSwitches.get(key) ?? 1) - 1;
          diskSwitches.set(key, left);
          if (left === 0) storage.outOfDescriptors = false;
        });
        break;
      }
    }
  }

  return {
    onDeparture(node, effect, w) {
      if (effect.kind === 'adminReply') operator.answered(w, node);
    },
    onCrash(node, w) {
      operator.ended(w, node);
    },
    onExit(node, _code, _reason, w) {
      operator.ended(w, node);
      if (!topology.supervised.has(node)) return;
      const delay = restartDelay.get(node) ?? topology.supervisorDelayMs;
      restartDelay.delete(node);
      w.schedule(w.now + delay, `supervisor restarts ${node}`, restart(node));
    },
  };
}

function stormRates(knobs: Knobs) {
  return {
    network: {
      latencyMs: knobs.latencyMs,
      jitterMs: knobs.jitterMs,
      drop: knobs.drop,
      duplicate: knobs.duplicate,
      reorder: knobs.reorder,
    },
    io: { ioError: knobs.ioError, noSpace: knobs.noSpace },
  };
}

/**
 * A disk or DFS fault window: on at `at`, off after `duration`. Overlapping windows of the same fault on the same
 * device are counted, so the fault lasts until the last of them ends.
 */
function switchWindow(
  world: World,
  switches: Map<string, number>,
  faults: DiskFaults,
  key: string,
  fault: { readonly at: number; readonly fault: DiskFault; readonly duration: number },
  label: string,
): void {
  world.schedule(fault.at, label, () => {
    switches.set(key, (switches.get(key) ?? 0) + 1);
    setDiskFault(faults, fault.fault, true);
  });
  world.schedule(fault.at + fault.duration, `repair ${label}`, () => {
    const left = (switches.get(key) ?? 1) - 1;
    switches.set(key, left);
    if (left === 0) setDiskFault(faults, fault.fault, false);
  });
}

function setDiskFault(faults: DiskFaults, fault: DiskFault, on: boolean): void {
  switch (fault) {
    case 'write-errors':
      faults.failWrites = on;
      return;
    case 'read-errors':
      faults.failReads = on;
      return;
    case 'sync-errors':
      faults.failSyncs = on;
      return;
    case 'full':
      faults.full = on;
      return;
    case 'slow':
      faults.slowFactor = on ? SLOW_DISK_FACTOR : 1;
      return;
    case 'corrupt-reads':
      faults.corruptReads = on;
      return;
  }
}

function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'crash':
      return `FAULT crash ${fault.target} (down ${fault.downFor}ms)`;
    case 'graceful':
      return `FAULT graceful exit of ${fault.target} (restart ${fault.downFor}ms after it exits)`;
    case 'partition':
      return `FAULT partition {${fault.targets.join(',')}} | ${fault.otherSide === undefined ? 'rest' : `{${fault.otherSide.join(',')}}`} for ${fault.duration}ms`;
    case 'oneway': {
      const named = (groups: readonly string[]) => (groups.length === 0 ? 'rest' : `{${groups.join(',')}}`);
      return `FAULT one-way partition: ${named(fault.from)} -> ${named(fault.to)} lost (the other way delivered) for ${fault.duration}ms`;
    }
    case 'disk':
      return `FAULT disk ${fault.target}${fault.mount} ${fault.fault} for ${fault.duration}ms`;
    case 'exclude':
      return `FAULT operator excludes ${fault.target} for ${fault.duration}ms`;
    case 'event':
      return `FAULT operator sends ${fault.event} to ${fault.target}, Recommission after ${fault.duration}ms`;
    case 'kill':
      return `FAULT ${fault.target} loses a ${fault.task} task (its executor died)`;
    case 'dfs':
      return `FAULT dfs ${fault.fault} for ${fault.duration}ms`;
    case 'descriptors':
      return `FAULT ${fault.target} runs out of file descriptors for ${fault.duration}ms`;
  }
}
