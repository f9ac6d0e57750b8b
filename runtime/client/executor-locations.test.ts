// One executor registers a shuffle once: its first map task asks the lifecycle manager for the locations, later
// tasks of the shuffle in the same executor start from what it holds (core/machines/client/location-cache.ts),
// and the shuffle still reads back whole, replicated, across a worker lost between two maps.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { clientSide, readAndVerify, recordsOf, winnersOf, type ClientSide } from '../testing/small-job.ts';
import type { MapResult } from './shuffle-client.ts';

const JOB = { maps: 4, partitions: 6, recordsPerPartition: 20, recordBytes: 64 };

describe('an executor registers a shuffle once', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  const won: Record<string, unknown>[] = [];
  before(async () => {
    cluster = await LocalCluster.start({ workers: 3 });
    client = await clientSide(cluster.masterUrl, {
      conf: { 'svc.client.push.replicate.enabled': 'true' },
      logLevel: 'info',
      logger: {
        error: () => undefined,
        warn: () => undefined,
        info: (fields, message) => {
          if (message === 'map attempt won') won.push(fields);
        },
      },
    });
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('its later map tasks push to the locations it holds, and the shuffle verifies after a worker is lost', async () => {
    const shuffle = client!.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
    const results = new Map<string, MapResult>();
    for (let mapId = 0; mapId < JOB.maps; mapId++) {
      // A worker lost after two maps: the later maps start from locations some of which are on it, and revive.
      if (mapId === 2) {
        cluster!.workers[0]!.kill('SIGKILL');
        await cluster!.workers[0]!.waitForExit();
      }
      const writer = shuffle.writer(mapId, 0);
      recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
      results.set(`${mapId}/0`, await writer.close());
    }
    assert.deepEqual(
      won.map((fields) => [fields.mapId, fields.locationsFrom]),
      [
        [0, 'lifecycleManager'],
        [1, 'executor'],
        [2, 'executor'],
        [3, 'executor'],
      ],
    );
    await readAndVerify(client!.executor, 0, JOB, winnersOf(results));
  });
});
