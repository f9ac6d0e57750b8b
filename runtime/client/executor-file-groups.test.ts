// One executor asks for a shuffle's file group once: the reduce tasks it runs at the same time wait for the first
// one's ask and read with its answer (core/machines/client/file-group-cache.ts), rather than each asking the
// lifecycle manager and decoding the answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { within } from '../testing/deadline.ts';
import { clientSide, recordsOf, type ClientSide } from '../testing/small-job.ts';

const JOB = { maps: 3, partitions: 6, recordsPerPartition: 10, recordBytes: 32 };

describe('an executor asks for a file group once', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  const asked: Record<string, unknown>[] = [];
  const fromCache: Record<string, unknown>[] = [];
  before(async () => {
    cluster = await LocalCluster.start({ workers: 2 });
    client = await clientSide(cluster.masterUrl, {
      logLevel: 'debug',
      logger: {
        error: () => undefined,
        warn: () => undefined,
        debug: (fields, message) => {
          if (message === 'file group asked') asked.push(fields);
          if (message === "file group from the executor's cache") fromCache.push(fields);
        },
      },
    });
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('its reduce tasks started together cause one GetReducerFileGroup, and all read their partitions', async () => {
    const shuffle = client!.executor.shuffle(0, { maps: JOB.maps, partitions: JOB.partitions });
    for (let mapId = 0; mapId < JOB.maps; mapId++) {
      const writer = shuffle.writer(mapId, 0);
      recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
      await writer.close();
    }
    // Every read starts (and claims the file group) before any answer can come back: one asks, the others wait.
    const reads = await within(
      Promise.all([...Array(JOB.partitions).keys()].map((p) => shuffle.read(p))),
      'the six reads',
    );
    reads.forEach((records, p) =>
      assert.equal(records.length, JOB.maps * JOB.recordsPerPartition, `partition ${p}`),
    );
    assert.equal(asked.length, 1, `the lifecycle manager was asked ${asked.length} times`);
    assert.equal(fromCache.length, JOB.partitions - 1);
  });
});
