// Decommissioning a worker under load (issue 26), on real processes: a replicated job runs on three workers; the
// operator sends `Decommission` (or `DecommissionThenIdle`) through the master for the worker holding the most of
// its partitions. The worker takes no new slots, its open partitions move on (HARD_SPLIT, revive), it leaves only
// once its shuffles are gone, and every record verifies; /api/v1/workers and the metrics show each state on the way.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { workerKey, type PartitionLocation } from '../core/domain/index.ts';
import { PUSH_MOVED_EVENT } from '../core/machines/client/map-task.ts';
import type { ClientLogger } from './client/client-log.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { StagedShuffle } from './testing/staged-shuffle.ts';
import { pollFor } from './testing/poll.ts';
import { DEFAULT_WAIT_MS, type LogLine } from './cluster/server-process.ts';
import { clientSide, type ClientSide, type SmallJob } from './testing/small-job.ts';

const REPLICATED = {
  'svc.client.push.replicate.enabled': 'true',
  'svc.client.push.buffer.max.size': '4k',
  // Small budgets hand records to the task (and push them) as they are written.
  'svc.client.push.maxUnacknowledgedBytes': '64k',
};
const WORKER_CONF = ['svc.worker.decommission.checkInterval=200ms'];
// Workers heartbeat every timeout / 4 (5 s): the master learns a worker's return to Normal from its next heartbeat.
const CONF = ['svc.master.heartbeat.worker.timeout=20s'];
const JOB: SmallJob = { maps: 2, partitions: 6, recordsPerPartition: 160, recordBytes: 300 };

/** Polls a management endpoint until `ready` holds on its JSON (the API is what an operator watches). */
async function untilApi<T>(url: string, ready: (body: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  return pollFor(
    async () => {
      last = (await (await fetch(url)).json()) as T;
      return ready(last) ? last : undefined;
    },
    () => `${what}: ${JSON.stringify(last)}`,
    { timeoutMs: DEFAULT_WAIT_MS },
  );
}

async function metric(url: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`metrics_${name}_Value`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

interface WorkerIdBody {
  host: string;
  rpcPort: number;
  pushPort: number;
  fetchPort: number;
  replicatePort: number;
}
function idBody(key: string): WorkerIdBody {
  const [host, rpcPort, pushPort, fetchPort, replicatePort] = key.split(':');
  return {
    host: host!,
    rpcPort: Number(rpcPort),
    pushPort: Number(pushPort),
    fetchPort: Number(fetchPort),
    replicatePort: Number(replicatePort),
  };
}
const keyOf = (w: WorkerIdBody) => `${w.host}:${w.rpcPort}:${w.pushPort}:${w.fetchPort}:${w.replicatePort}`;

interface MasterWorkers {
  workers: WorkerIdBody[];
  decommissioningWorkers: WorkerIdBody[];
  shutdownWorkers: WorkerIdBody[];
}
interface WorkerInfo {
  workerState: string;
  workerStateStartTime: number;
  isDecommissioning: boolean;
  isShutdown: boolean;
}

async function sendEvent(cluster: LocalCluster, eventType: string, worker: string): Promise<void> {
  const response = await fetch(`${cluster.masterHttpUrl}/api/v1/workers/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ eventType: eventType.toUpperCase(), workers: [idBody(worker)] }),
  });
  assert.equal(response.status, 200, `${eventType}: ${await response.text()}`);
}

/** The client library's lines, as an application's logger receives them. */
class CapturedLog implements ClientLogger {
  readonly lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  error(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'error', fields, message });
  }
  warn(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'warn', fields, message });
  }
  info(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'info', fields, message });
  }
}

/** The index and id of the worker holding the most copies of the stage's partitions. */
function busiest(cluster: LocalCluster, copies: readonly PartitionLocation[]) {
  const held = cluster.workerIds.map((id) => copies.filter((c) => workerKey(c.worker) === id).length);
  const index = held.indexOf(Math.max(...held));
  return { index, id: cluster.workerIds[index]!, copies: held[index]! };
}

const transitionTo = (state: string) => (line: LogLine) =>
  line.event === 'worker.lifecycle.transition' && line.to === state;

describe('decommissioning a worker under load (real processes)', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  afterEach(async () => {
    await client?.close().catch(() => undefined);
    await cluster?.stop();
    client = undefined;
    cluster = undefined;
  });

  it('Decommission: no new slots, partitions move on, the job verifies, the worker exits once its shuffles go', async () => {
    cluster = await LocalCluster.start({ workers: 3, conf: CONF, workerConf: WORKER_CONF });
    const c = cluster;
    const appLog = new CapturedLog();
    client = await clientSide(c.masterUrl, { conf: REPLICATED, logger: appLog, logLevel: 'info' });
    const stage = await new StagedShuffle(client, 0, JOB).begin();
    const victim = busiest(c, stage.reserved());
    assert.ok(victim.copies > 0, 'the decommissioned worker holds partitions of the running job');
    const worker = c.workers[victim.index]!;
    const workerApi = `${c.workerHttpUrl(victim.index)}/api/v1/workers`;

    await sendEvent(c, 'Decommission', victim.id);
    await worker.waitFor(transitionTo('InDecommission'), 'its move to InDecommission');
    const info = await untilApi<WorkerInfo>(workerApi, (w) => w.isDecommissioning, 'isDecommissioning');
    assert.equal(info.workerState, 'InDecommission');
    const listed = await untilApi<MasterWorkers>(
      `${c.masterHttpUrl}/api/v1/workers`,
      (body) => body.decommissioningWorkers.some((w) => keyOf(w) === victim.id),
      'the master listing the worker as decommissioning',
    );
    assert.ok(
      !listed.shutdownWorkers.some((w) => keyOf(w) === victim.id),
      '!listed.shutdownWorkers.some((w) => keyOf(w) === victim.id)',
    );
    assert.equal(
      await metric(`${c.workerHttpUrl(victim.index)}/metrics/prometheus`, 'IsDecommissioningWorker'),
      1,
    );
    assert.equal(await metric(`${c.masterHttpUrl}/metrics/prometheus`, 'DecommissionWorkerCount'), 1);

    // Its open partitions move on: the rest of the maps' records go to revived copies elsewhere.
    await stage.endAndVerify();
    const revived = stage.reserved().filter((copy) => copy.epoch > 0);
    assert.ok(revived.length > 0, 'partitions were revived');
    // The application's log: the moves are expected, so no warning per push, and a few info lines at most (the
    // first move of each cause per summary interval; the rest are counted into one log.repeated line).
    const hardSplitWarnings = appLog.lines.filter(
      (line) => line.level === 'warn' && line.fields.cause === 'HARD_SPLIT',
    );
    assert.deepEqual(hardSplitWarnings, [], 'no warning for an expected move');
    const moves = appLog.lines.filter((line) => line.fields.event === PUSH_MOVED_EVENT);
    assert.ok(moves.length >= 1, 'the move is told');
    assert.ok(moves.length <= 3, `a few move lines, not one per push: ${moves.length}`);
    assert.ok(
      moves.every((line) => line.level === 'info'),
      'moves are info lines',
    );
    assert.ok(
      revived.every((copy) => workerKey(copy.worker) !== victim.id),
      'none back on the worker',
    );
    // A new shuffle gets no slot on it.
    const next = await new StagedShuffle(client, 1, JOB).begin();
    assert.ok(
      next.reserved().every((copy) => workerKey(copy.worker) !== victim.id),
      'no new slots',
    );
    await next.endAndVerify();
    assert.ok(worker.running, 'the worker stays while the application holds shuffles on it');

    // The application ends: its shuffles go, and the worker exits.
    await client.close();
    client = undefined;
    assert.equal(await worker.waitForExit(), 0);
    const exit = worker.seen((line) => line.event === 'worker.exit')[0];
    assert.equal(exit?.kind, 'DECOMMISSION');
    const tookMs = Date.parse(String(exit?.time)) - info.workerStateStartTime;
    assert.ok(tookMs > 0, `the decommission took ${tookMs} ms`);
  });

  it('DecommissionThenIdle: the worker goes Idle once drained, and Recommission brings it back into offers', async () => {
    cluster = await LocalCluster.start({ workers: 3, conf: CONF, workerConf: WORKER_CONF });
    const c = cluster;
    client = await clientSide(c.masterUrl, { conf: REPLICATED });
    const stage = await new StagedShuffle(client, 0, JOB).begin();
    const victim = busiest(c, stage.reserved());
    assert.ok(victim.copies > 0, 'the worker holds partitions of the running job');
    const worker = c.workers[victim.index]!;
    const workerApi = `${c.workerHttpUrl(victim.index)}/api/v1/workers`;

    await sendEvent(c, 'DecommissionThenIdle', victim.id);
    await worker.waitFor(transitionTo('InDecommissionThenIdle'), 'its move to InDecommissionThenIdle');
    await untilApi<MasterWorkers>(
      `${c.masterHttpUrl}/api/v1/workers`,
      (body) => body.decommissioningWorkers.some((w) => keyOf(w) === victim.id),
      'the master listing the worker as decommissioning',
    );
    await stage.endAndVerify();
    assert.ok(
      stage.reserved().some((copy) => copy.epoch > 0),
      'partitions were revived',
    );
    await client.close();
    client = undefined;

    // Drained (no shuffle left): Idle, still running, in no offer.
    await worker.waitFor(transitionTo('Idle'), 'its move to Idle');
    const idle = await untilApi<WorkerInfo>(workerApi, (w) => w.workerState === 'Idle', 'workerState Idle');
    assert.equal(idle.isDecommissioning, false);
    assert.ok(worker.running, 'an idle worker keeps running');
    assert.equal(
      await metric(`${c.workerHttpUrl(victim.index)}/metrics/prometheus`, 'IsDecommissioningWorker'),
      0,
    );
    const spare = await clientSide(c.masterUrl, { conf: REPLICATED });
    try {
      const probe = await new StagedShuffle(spare, 0, JOB).begin();
      assert.ok(
        probe.reserved().every((copy) => workerKey(copy.worker) !== victim.id),
        'idle: no slots',
      );
      await probe.endAndVerify();
    } finally {
      await spare.close();
    }

    await sendEvent(c, 'Recommission', victim.id);
    await worker.waitFor(transitionTo('Normal'), 'its move back to Normal');
    await untilApi<MasterWorkers>(
      `${c.masterHttpUrl}/api/v1/workers`,
      (body) =>
        !body.decommissioningWorkers.some((w) => keyOf(w) === victim.id) &&
        !body.shutdownWorkers.some((w) => keyOf(w) === victim.id),
      'the master no longer listing the worker as leaving',
    );
    client = await clientSide(c.masterUrl, { conf: REPLICATED });
    const back = await new StagedShuffle(client, 0, JOB).begin();
    assert.ok(
      back.reserved().some((copy) => workerKey(copy.worker) === victim.id),
      'a new shuffle gets slots on the recommissioned worker',
    );
    await back.endAndVerify();
  });
});
