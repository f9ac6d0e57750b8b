import { chmodSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseWorkerKey } from '../../core/domain/worker.ts';
import type { LocalCluster } from '../cluster/local-cluster.ts';
import type { ServerProcess } from '../cluster/server-process.ts';
import type { NetworkFault } from '../cluster/fault-proxy.ts';
import type { HostNetwork, Side } from '../cluster/hosts.ts';
import { successorOf, theLeader, type Leader } from './leaders.ts';
import { struckWorkers, type ScheduledFault } from './schedule.ts';
import type { MasterSupervisor } from './supervisor.ts';

/** One fault as it happened: when it struck and healed (ms from the soak's start), and what was seen on the way. */
export interface TimelineEntry {
  readonly fault: ScheduledFault;
  readonly startMs: number;
  endMs: number | undefined;
  readonly notes: string[];
}

/** How long a worker may take to use a restored disk again: two disk checks (30 s each by default) and room. */
const DISK_RECOVERY_WAIT_MS = 90_000;
/** How long a restarted or continued worker may take to register again before the timeline says it did not. */
const REREGISTER_WAIT_MS = 90_000;
/**
 * How long a group may take to elect the next leader after a fault on its leader before the fault counts as not
 * proven: the documented bound is the lease TTL plus 2 s (10 s with the defaults; docs/high-availability.md), and a
 * loaded machine's start of the successor takes longer. The time measured is on the timeline.
 */
const FAILOVER_WAIT_MS = 60_000;
/** How long a deposed or killed member may take to be restarted by its supervisor and follow the new leader. */
const REJOIN_WAIT_MS = 120_000;

const hold = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A worker's node id as the management interface takes it. */
function workerIdBody(cluster: LocalCluster, index: number): Record<string, unknown> {
  return { ...parseWorkerKey(cluster.workerIds[index]!) };
}

/**
 * Injects scheduled faults into a local cluster, one at a time, recording each on the timeline. A fault's hold is
 * the schedule's (a wait that is the fault itself, not a synchronisation); recovery waits on log lines.
 */
export class FaultInjector {
  readonly timeline: TimelineEntry[] = [];
  private readonly isRoot = process.getuid?.() === 0;

  constructor(
    private readonly cluster: LocalCluster,
    private readonly clock: () => number,
    private readonly heartbeatTimeoutMs: number,
    /** With a group of masters: the supervisor that restarts its members (the leader's faults wait for it). */
    private readonly supervisor?: MasterSupervisor,
  ) {}

  /** The entry of the fault in force, if one is. */
  get current(): TimelineEntry | undefined {
    const last = this.timeline.at(-1);
    return last?.endMs === undefined ? last : undefined;
  }

  async inject(fault: ScheduledFault): Promise<TimelineEntry> {
    const entry: TimelineEntry = { fault, startMs: this.clock(), endMs: undefined, notes: [] };
    this.timeline.push(entry);
    try {
      await this.run(fault, entry);
    } catch (error) {
      entry.notes.push(`the injector failed: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    } finally {
      entry.endMs = this.clock();
    }
    return entry;
  }

  private async run(fault: ScheduledFault, entry: TimelineEntry): Promise<void> {
    const cluster = this.cluster;
    const index = fault.worker ?? -1;
    const worker = (): ServerProcess => cluster.workers[index]!;
    switch (fault.kind) {
      case 'kill':
      case 'restart-immediate':
        worker().kill('SIGKILL');
        await worker().exited();
        await hold(fault.holdMs);
        await this.restartWorker(index, entry);
        return;
      case 'restart-graceful': {
        worker().kill('SIGTERM');
        const code = await worker().exited();
        entry.notes.push(`graceful exit with code ${String(code)}`);
        await this.restartWorker(index, entry);
        return;
      }
      case 'stop-short':
      case 'stop-past': {
        const watch = this.watchLost([index]);
        worker().kill('SIGSTOP');
        await hold(fault.holdMs);
        worker().kill('SIGCONT');
        await watch.settle(fault, entry, 'stopped');
        return;
      }
      case 'leader-kill':
      case 'leader-freeze':
      case 'leader-partition':
        await this.leaderFault(fault, entry);
        return;
      case 'decommission': {
        entry.notes.push(await this.workerEvent('DECOMMISSIONTHENIDLE', index));
        await hold(fault.holdMs);
        entry.notes.push(await this.workerEvent('RECOMMISSION', index));
        return;
      }
      case 'master-restart': {
        await cluster.restartMaster('SIGKILL', { whileDown: () => hold(fault.holdMs) });
        // A master restarted with its state remembers its workers: they need not register again (their next
        // heartbeats are answered as before), so the timeline records what the master lists instead.
        entry.notes.push(await this.listedWorkers());
        return;
      }
      case 'disk-unwritable':
      case 'disk-removed': {
        const dir = path.join(cluster.dir, `worker-${index}`, 'disk-1');
        const before = worker().lineCount;
        if (fault.kind === 'disk-unwritable') {
          chmodSync(dir, 0o555);
          if (this.isRoot) entry.notes.push('running as root: the read-only mode does not stop its writes');
        } else {
          // Moved away first, in one step: removed in place, a file the worker created between the listing and the
          // last rmdir failed the remove (ENOTEMPTY) and stopped the injector (seed ci-1, 30 November 2026).
          const removed = `${dir}.removed`;
          rmSync(removed, { recursive: true, force: true });
          if (existsSync(dir)) renameSync(dir, removed);
          rmSync(removed, { recursive: true, force: true, maxRetries: 5 });
        }
        await hold(fault.holdMs);
        if (fault.kind === 'disk-unwritable') chmodSync(dir, 0o755);
        else mkdirSync(dir, { recursive: true });
        await this.diskBackInUse(worker(), before, entry);
        return;
      }
      case 'latency':
      case 'stall':
      case 'one-way-stall':
      case 'cut': {
        const proxies = cluster.proxies[index] ?? [];
        if (proxies.length === 0) throw new Error('network faults need a cluster with fault proxies');
        const networkFault: NetworkFault =
          fault.kind === 'latency'
            ? { kind: 'latency', ms: fault.latencyMs ?? 100 }
            : fault.kind === 'one-way-stall'
              ? { kind: 'one-way-stall', direction: fault.direction ?? 'to-target' }
              : { kind: fault.kind };
        for (const proxy of proxies) proxy.inject(networkFault);
        await hold(fault.holdMs);
        for (const proxy of proxies) proxy.heal();
        return;
      }
      case 'link-cut':
      case 'one-way-partition':
      case 'rack-partition': {
        const network = cluster.options.hosts;
        if (network === undefined) throw new Error(`${fault.kind} needs a cluster on namespace hosts`);
        const struck = struckWorkers(fault);
        const watch = this.watchLost(struck);
        await this.partition(network, fault, struck);
        await hold(fault.holdMs);
        // The schedule never overlaps two faults when any is a network's (toleratedFaults is at most 1), so the
        // network's heal (every route removed, every link up) heals this fault alone.
        await network.heal();
        await watch.settle(fault, entry, 'cut off');
        return;
      }
    }
  }

  /** Strikes a host fault: the struck workers' hosts cut off from everyone else (the master, applications, workers). */
  private async partition(
    network: HostNetwork,
    fault: ScheduledFault,
    struck: readonly number[],
  ): Promise<void> {
    const hosts = struck.map((index) => this.cluster.workerHost(index)!);
    const rest: Side[] = ['root', ...network.hosts.filter((host) => !hosts.includes(host))];
    if (fault.kind === 'link-cut') {
      for (const host of hosts) await network.cut(host);
    } else if (fault.kind === 'one-way-partition') {
      for (const host of hosts) {
        for (const other of rest) {
          if (fault.drop === 'from-worker') await network.dropFromTo(host, other);
          else await network.dropFromTo(other, host);
        }
      }
    } else await network.partition(hosts, rest);
  }

  /**
   * Watches the master for `workers` being declared lost while a fault holds them; settle() notes on the timeline
   * whether they were, and waits for each that was to register again (the master logs it).
   */
  private watchLost(workers: readonly number[]): {
    settle(fault: ScheduledFault, entry: TimelineEntry, verb: string): Promise<void>;
  } {
    // Every master the cluster ran: with a group, the one that declares the worker lost and the one it registers
    // with again may differ (a failover between them).
    const masters = (): ServerProcess[] =>
      this.cluster.started.filter((server) => server.options.name.startsWith('master'));
    const ids = workers.map((index) => this.cluster.workerIds[index]);
    const lost = (id: string | undefined): number =>
      masters().reduce(
        (n, master) =>
          n + master.seen((line) => line.event === 'master.worker.lost' && line.worker === id).length,
        0,
      );
    const lostBefore = ids.map(lost);
    const after = new Map(masters().map((master) => [master, master.lineCount]));
    return {
      settle: async (fault, entry, verb) => {
        for (const [i, id] of ids.entries()) {
          const name = workers.length === 1 ? '' : `worker-${workers[i]} `;
          if (lost(id) === lostBefore[i]) {
            entry.notes.push(
              `${name}never declared lost (${verb} ${fault.holdMs} ms, heartbeat timeout ${this.heartbeatTimeoutMs} ms)`,
            );
            continue;
          }
          entry.notes.push(`${name}declared lost`);
          // A lost worker comes back through registration; the master logs it (worker.registered on the worker's
          // side only follows when the master asked it to register again).
          try {
            await Promise.any(
              masters().map((master) =>
                master.waitFor(
                  (line) => /^master\.worker\.(re)?registered$/.test(line.event ?? '') && line.worker === id,
                  `${id}'s registration`,
                  after.get(master) ?? 0,
                  REREGISTER_WAIT_MS,
                ),
              ),
            );
            entry.notes.push(`${name}registered again`);
          } catch (error) {
            entry.notes.push(
              `${name}not registered again: ${error instanceof Error ? error.message.split('\n')[0] : ''}`,
            );
          }
        }
      },
    };
  }

  /**
   * A fault on the group's leader, proven by the members' own lines: the leader is the one member whose log says it
   * leads and whose GET /api/v1/masters agrees; the fault held until another member leads (`ha.leading`), which a
   * freeze or a cut must have made it give up (a frozen or cut-off leader's lease must end first); the struck member
   * steps down where it lives on (`ha.stepDown`, exit 75), and its supervisor's restart follows the new leader.
   */
  private async leaderFault(fault: ScheduledFault, entry: TimelineEntry): Promise<void> {
    const supervisor = this.supervisor;
    if (supervisor === undefined) throw new Error(`${fault.kind} needs a group of masters (--ha)`);
    const leader = await theLeader(this.cluster, FAILOVER_WAIT_MS);
    const restarts = supervisor.restartsOf(leader.id).length;
    const linesBefore = leader.process.lineCount;
    entry.notes.push(`${leader.id} led (term ${leader.term}; its GET /api/v1/masters agreed)`);
    const struckAt = Date.now();
    const next = async (): Promise<Leader> => {
      const successor = await successorOf(this.cluster, leader.process, FAILOVER_WAIT_MS);
      entry.notes.push(`${successor.id} leads ${Date.now() - struckAt} ms later (term ${successor.term})`);
      return successor;
    };
    const steppedDown = async (): Promise<void> => {
      const line = await leader.process.waitFor(
        (l) => l.event === 'ha.stepDown',
        `${leader.id}'s ha.stepDown`,
        linesBefore,
        FAILOVER_WAIT_MS,
      );
      entry.notes.push(`${leader.id} ${String(line.reason)} (${Date.now() - struckAt} ms after the fault)`);
      const code = await leader.process.waitForExit(FAILOVER_WAIT_MS);
      entry.notes.push(`${leader.id} exited with code ${String(code)}`);
    };
    const kind = fault.kind as 'leader-kill' | 'leader-freeze' | 'leader-partition';
    switch (kind) {
      case 'leader-kill':
        leader.process.kill('SIGKILL');
        await leader.process.exited();
        await next();
        break;
      case 'leader-freeze':
        leader.process.kill('SIGSTOP');
        try {
          // Another leads only once the frozen leader's lease ended: frozen past it, as meant.
          await next();
          await hold(fault.holdMs);
        } finally {
          leader.process.kill('SIGCONT');
        }
        await steppedDown();
        break;
      case 'leader-partition': {
        const network = this.cluster.options.hosts;
        const host = this.cluster.memberHost(leader.id);
        if (network === undefined || host === undefined)
          throw new Error('leader-partition needs a cluster on namespace hosts');
        await network.cut(host);
        try {
          // Cut off from etcd it stops on its own clock, before its lease can end and another can lead.
          await steppedDown();
          await next();
          await hold(fault.holdMs);
        } finally {
          await network.heal();
        }
        break;
      }
    }
    const restart = await supervisor.restarted(leader.id, restarts + 1, REJOIN_WAIT_MS);
    if (restart.process === undefined)
      throw new Error(`${leader.id} was not restarted: ${restart.error ?? ''}`);
    const following = await restart.process.waitFor(
      // Its own old election key may outlive it by a lease: the first leader it names can be itself, dead.
      (line) =>
        (line.event === 'ha.following' && !String(line.leader).startsWith(`${leader.id}@`)) ||
        line.event === 'ha.leading',
      `${leader.id}'s return to the group`,
      0,
      REJOIN_WAIT_MS,
    );
    entry.notes.push(
      following.event === 'ha.following'
        ? `${leader.id} restarted by its supervisor, follows ${String(following.leader)}`
        : `${leader.id} restarted by its supervisor, leads again`,
    );
  }

  /**
   * A disk the worker took out of use during the fault comes back only when its probe finds it writable again
   * (every svc.worker.monitor.disk.check.interval): the fault lasts until the worker says so, so that jobs short of
   * slots meanwhile are judged under it.
   */
  private async diskBackInUse(worker: ServerProcess, before: number, entry: TimelineEntry): Promise<void> {
    if (worker.seen((line) => line.event === 'worker.disk.failed', before).length === 0) {
      entry.notes.push('the worker kept the disk in use');
      return;
    }
    try {
      await worker.waitFor(
        (line) => line.event === 'worker.disk.recovered',
        'its disk back in use',
        before,
        DISK_RECOVERY_WAIT_MS,
      );
      entry.notes.push('disk back in use');
    } catch (error) {
      entry.notes.push(`disk not back in use: ${error instanceof Error ? error.message.split('\n')[0] : ''}`);
    }
  }

  private async restartWorker(index: number, entry: TimelineEntry): Promise<void> {
    const started = await this.cluster.startWorker(index, { samePorts: true });
    await this.registeredAgain(started, 0, entry);
  }

  private async registeredAgain(worker: ServerProcess, after: number, entry: TimelineEntry): Promise<void> {
    try {
      await worker.waitFor(
        (line) => line.event === 'worker.registered',
        'its registration',
        after,
        REREGISTER_WAIT_MS,
      );
      entry.notes.push('registered again');
    } catch (error) {
      entry.notes.push(`not registered again: ${error instanceof Error ? error.message.split('\n')[0] : ''}`);
    }
  }

  private async listedWorkers(): Promise<string> {
    try {
      const response = await fetch(`${this.cluster.masterHttpUrl}/api/v1/workers`);
      const body = (await response.json()) as { workers?: unknown[] };
      return `the restarted master lists ${body.workers?.length ?? 0} workers`;
    } catch (error) {
      return `the restarted master's /api/v1/workers failed: ${error instanceof Error ? error.message : ''}`;
    }
  }

  private async workerEvent(eventType: string, index: number): Promise<string> {
    // A group's management writes go to its leader (a follower answers 503 naming it).
    const master =
      this.cluster.memberIds.length === 0
        ? this.cluster.masterHttpUrl
        : ((await theLeader(this.cluster, FAILOVER_WAIT_MS)).httpUrl ?? this.cluster.masterHttpUrl);
    const response = await fetch(`${master}/api/v1/workers/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ eventType, workers: [workerIdBody(this.cluster, index)] }),
    });
    const answer = (await response.json()) as { success?: boolean; message?: string };
    return `${eventType}: ${response.status} ${answer.success === true ? 'success' : 'refused'} ${answer.message ?? ''}`;
  }
}
