// Operator commands through HTTP on a worker that holds data (real processes): the shuffles it holds show on both
// roles, a Decommission event sent to the master reaches the worker in a heartbeat reply and the worker reports
// isDecommissioning, and its exit endpoint answers for the exit types left to try (DECOMMISSION, NONE).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseWorkerKey, type WorkerId } from '../../core/domain/index.ts';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { clientSide, recordsOf, type ClientSide, type SmallJob } from '../testing/small-job.ts';
import { getJson, pollUntil, postJson, type RawResponse } from './testing/http-client.ts';
import { responseValidator } from './testing/openapi-validator.ts';

const JOB: SmallJob = { maps: 2, partitions: 3, recordsPerPartition: 5 };
const masterDoc = responseValidator('master');
const workerDoc = responseValidator('worker');

function documented(doc: typeof masterDoc, apiPath: string, response: RawResponse, method = 'GET'): void {
  assert.equal(response.status, 200, `${apiPath}: ${response.text}`);
  const problem = doc.check(method, apiPath, 200, response.json);
  assert.equal(problem, undefined, `${apiPath}: ${problem}\n${response.text}`);
}

describe('a worker holding data, decommissioned through the management interface', () => {
  let cluster: LocalCluster;
  let client: ClientSide | undefined;
  let id: WorkerId;

  before(async () => {
    // Heartbeats every 500 ms, so that an event reaches the worker quickly.
    cluster = await LocalCluster.start({ workers: 1, conf: ['svc.master.heartbeat.worker.timeout=2s'] });
    id = parseWorkerKey(cluster.workerIds[0]!);
    client = await clientSide(cluster.masterUrl);
    // One map of two: the stage never ends, so the worker keeps the shuffle and its partitions stay open.
    const writer = client.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions }).writer(0);
    recordsOf(JOB, 0, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
    await writer.close();
  });

  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('shows the application, its shuffle and the open partitions on both roles', async () => {
    const appId = client!.app.appId;
    const masterApps = await getJson(cluster.masterHttpUrl, '/api/v1/applications');
    documented(masterDoc, '/api/v1/applications', masterApps);
    assert.ok(
      (masterApps.json as { applications: { appId: string }[] }).applications.some((a) => a.appId === appId),
      '(masterApps.json as { applications: { appId: string }[] }).applications.some((a) => a.appId === appId)',
    );
    const masterShuffles = await getJson(cluster.masterHttpUrl, '/api/v1/shuffles');
    documented(masterDoc, '/api/v1/shuffles', masterShuffles);
    assert.deepEqual((masterShuffles.json as { shuffleIds: string[] }).shuffleIds, [`${appId}-0`]);

    const worker = cluster.workerHttpUrl(0);
    const apps = await getJson(worker, '/api/v1/applications');
    documented(workerDoc, '/api/v1/applications', apps);
    assert.deepEqual((apps.json as { applications: string[] }).applications, [appId]);
    const shuffles = await getJson(worker, '/api/v1/shuffles');
    documented(workerDoc, '/api/v1/shuffles', shuffles);
    assert.deepEqual((shuffles.json as { shuffleIds: string[] }).shuffleIds, [`${appId}-0`]);
    const partitions = await getJson(worker, '/api/v1/shuffles/partitions');
    documented(workerDoc, '/api/v1/shuffles/partitions', partitions);
    const primary = (
      partitions.json as { primaryPartitions: Record<string, Record<string, { mode: string }>> }
    ).primaryPartitions[`${appId}-0`];
    assert.equal(Object.keys(primary ?? {}).length, JOB.partitions);
    assert.ok(
      Object.values(primary!).every((location) => location.mode === 'PRIMARY'),
      "Object.values(primary!).every((location) => location.mode === 'PRIMARY')",
    );
    const info = (await getJson(worker, '/api/v1/workers')).json as { slotUsed: number };
    assert.equal(info.slotUsed, JOB.partitions);
  });

  it('a Decommission event makes the worker report isDecommissioning', async () => {
    const sent = await postJson(cluster.masterHttpUrl, '/api/v1/workers/events', {
      eventType: 'DECOMMISSION',
      workers: [id],
    });
    documented(masterDoc, '/api/v1/workers/events', sent, 'POST');
    assert.equal((sent.json as { success: boolean }).success, true, sent.text);

    const info = await pollUntil('isDecommissioning on the worker', async () => {
      const response = await getJson(cluster.workerHttpUrl(0), '/api/v1/workers');
      const body = response.json as { isDecommissioning: boolean; isShutdown: boolean; workerState: string };
      return body.isDecommissioning ? body : undefined;
    });
    assert.deepEqual([info.workerState, info.isShutdown], ['InDecommission', true]);
    const listed = await pollUntil('the worker among the master’s decommissioning workers', async () => {
      const body = (await getJson(cluster.masterHttpUrl, '/api/v1/workers')).json as {
        decommissioningWorkers: { rpcPort: number }[];
      };
      return body.decommissioningWorkers.some((w) => w.rpcPort === id.rpcPort) ? true : undefined;
    });
    assert.equal(listed, true);
    const legacy = await getJson(cluster.workerHttpUrl(0), '/isDecommissioning');
    assert.equal(legacy.text.split('\n')[1], 'true');
  });

  it('exit DECOMMISSION on a decommissioning worker changes nothing; exit NONE stops it', async () => {
    const worker = cluster.workerHttpUrl(0);
    const again = await postJson(worker, '/api/v1/workers/exit', { type: 'DECOMMISSION' });
    documented(workerDoc, '/api/v1/workers/exit', again, 'POST');
    assert.deepEqual(again.json, {
      success: true,
      message: 'exit DECOMMISSION: nothing to do (already decommissioning)',
    });
    // NONE is the configured default: graceful shutdown is off, so the worker exits immediately.
    const now = await postJson(worker, '/api/v1/workers/exit', {});
    assert.equal((now.json as { success: boolean }).success, true, now.text);
    assert.equal(await cluster.workers[0]!.waitForExit(), 0);
  });
});
