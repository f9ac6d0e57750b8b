import type { NodeId } from '../../core/machines/effects.ts';
import { lifecycleManagerNodeId } from '../../core/protocol/node-ids.ts';
import { admitClient } from '../../core/release/admission.ts';
import type { Schedule } from '../faults/plan.ts';
import type { AppOutcome } from '../workload/engine.ts';
import type { AppShape, ClusterShape } from '../workload/shape.ts';
import type { Observer } from '../world/observers.ts';
import type { World } from '../world/world.ts';

/**
 * Liveness under the loss of one worker (`survives-one-worker-loss`): replication exists so that a job survives
 * exactly this. When a run's only fault is at most one crash of a worker, on a calm network and calm disks, and the
 * cluster keeps enough workers for a primary and a replica while that worker is down, every admitted application
 * that replicates must finish its jobs without any of its tasks failing. A failure is a violation, not an outcome.
 *
 * Only one crash per run: two workers lost one after the other may be the two copies of a partition written before
 * the first loss, which no design recovers without rerunning maps. A rolling upgrade in the right order with no
 * other fault is held to the same rule (each worker drains before it goes, one at a time); small disks (which may
 * fill for good) are left out, since they can legitimately end a job.
 */
export function oneWorkerLossApplies(schedule: Schedule, cluster: ClusterShape): boolean {
  const { knobs, faults } = schedule;
  if (knobs.drop > 0 || knobs.duplicate > 0 || knobs.reorder > 0 || knobs.ioError > 0 || knobs.noSpace > 0)
    return false;
  if (cluster.smallDisks === true) return false;
  // A quota may refuse an application's shuffles on purpose (an expected end, not a loss to tolerate).
  if (cluster.quota !== undefined) return false;
  const workers = new Set(cluster.workers.map((worker) => worker.token));
  // A rolling upgrade in the contract's order is one worker down at a time, gracefully: with no other fault it is
  // the loss replication tolerates, each worker in turn (issue 26: a 3-worker upgrade failed replicated jobs).
  if (cluster.upgrade !== undefined)
    return cluster.upgrade.order === 'right' && faults.length === 0 && workers.size >= 3;
  if (faults.length > 1) return false;
  const fault = faults[0];
  if (fault !== undefined && (fault.kind !== 'crash' || !workers.has(fault.target))) return false;
  return workers.size - faults.length >= 2;
}

/**
 * Records the failed map and reduce attempts of each application. Under the loss of one worker none may fail after
 * the loss: a push to the lost worker revives elsewhere and a read falls back to the other copy. The engine would
 * retry a failed task, and the exclusions behind such a failure expire after minutes, so an application could still
 * end as done: counting only failed applications would miss the failure the issue reported (two workers excluded,
 * revive out of candidates, every task retry failing until the exclusions expire). An attempt that fails after the
 * driver unregistered its shuffle (a losing speculative attempt whose job moved on) fails nobody's job.
 */
export class TaskFailures implements Observer {
  private readonly failures = new Map<string, { readonly at: number; readonly what: string }[]>();

  onStep(node: NodeId, _effects: unknown, world: World): void {
    const role = world.roleOf(node);
    if (role !== 'map' && role !== 'reduce') return;
    const state = world.stateOf(node) as {
      readonly phase?: string;
      readonly config?: { readonly appId?: string; readonly shuffleId?: number };
      readonly error?: unknown;
    };
    const appId = state.config?.appId;
    if (state.phase !== 'failed' || appId === undefined) return;
    const lm = world.stateOf(lifecycleManagerNodeId(appId)) as
      { readonly unregisteredShuffles?: ReadonlySet<number> } | undefined;
    if (lm?.unregisteredShuffles?.has(state.config?.shuffleId ?? -1) === true) return;
    const list = this.failures.get(appId) ?? [];
    if (list.some((failure) => failure.what.startsWith(`${node} `))) return;
    const error =
      typeof state.error === 'string' ? state.error : JSON.stringify(state.error ?? 'no reason given');
    list.push({ at: world.now, what: `${node} failed at ${world.now} ms: ${error}` });
    this.failures.set(appId, list);
  }

  /** The first failure of the application's tasks at or after `from` ms. */
  firstOf(appId: string, from: number): string | undefined {
    return this.failures.get(appId)?.find((failure) => failure.at >= from)?.what;
  }
}

export interface OneWorkerLossFailure {
  readonly invariant: 'survives-one-worker-loss';
  readonly detail: string;
}

/** The first replicating, admitted application that failed although the run only lost one worker. */
export function survivesOneWorkerLoss(
  schedule: Schedule,
  cluster: ClusterShape,
  outcomes: readonly { readonly app: AppShape; readonly outcome: AppOutcome }[],
  taskFailures: TaskFailures,
  replicates: (app: AppShape) => boolean,
): OneWorkerLossFailure | undefined {
  if (!oneWorkerLossApplies(schedule, cluster)) return undefined;
  for (const { app, outcome } of outcomes) {
    if (!replicates(app) || !admitClient(cluster.serverRelease, app.clientRelease).admitted) continue;
    const fault = schedule.faults[0];
    const lost = fault?.kind === 'crash' ? fault : undefined;
    // Task failures count from the loss, or from the upgrade's start (the engine's retries would hide what failed a
    // real job: issue 26's revive on a stale view failed tasks that a retry then ran). Before either, and in a run
    // with neither, only the outcome counts: a task may fail while the cluster starts (no worker registered yet).
    const from = lost?.at ?? cluster.upgrade?.at;
    const taskFailure = from === undefined ? undefined : taskFailures.firstOf(app.appId, from);
    const failure = outcome.kind === 'failed' ? outcome.reason : taskFailure;
    if (failure !== undefined) {
      return {
        invariant: 'survives-one-worker-loss',
        detail:
          `${app.appId} (client ${app.clientRelease}, replication on) ` +
          (outcome.kind === 'failed' ? 'failed' : 'had a task fail') +
          ' although ' +
          (lost !== undefined
            ? `only ${lost.target} was lost (at ${lost.at} ms)`
            : cluster.upgrade !== undefined
              ? `only a rolling upgrade took one worker at a time (from ${cluster.upgrade.at} ms)`
              : 'no worker was lost') +
          ` and ${cluster.workers.length - schedule.faults.length} of ${cluster.workers.length} workers stayed ` +
          `healthy: ${failure}`,
      };
    }
  }
  return undefined;
}
