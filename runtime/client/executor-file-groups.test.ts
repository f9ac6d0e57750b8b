// One executor asks for a shuffle's file group once: the reduce tasks it runs at the same time wait for the first
// one's ask and read with its answer (core/machines/client/file-group-cache.ts), rather than each asking the
// lifecycle manager and decoding the answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { within } from '../testing/deadline.ts';
import { pollUntil } from '../testing/poll.ts';
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
      // The lifecycle manager parks an ask for half of it: long enough that nothing is asked again unless handed on.
      conf: { 'svc.rpc.askTimeout': '240s' },
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
    asked.length = 0;
    fromCache.length = 0;
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

  it('hands the ask of a read given up to a waiting one, which asks; the others read with its answer', async () => {
    asked.length = 0;
    fromCache.length = 0;
    const shuffle = client!.executor.shuffle(1, { maps: JOB.maps, partitions: JOB.partitions });
    const writeMap = async (mapId: number) => {
      const writer = shuffle.writer(mapId, 0);
      recordsOf(JOB, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
      await writer.close();
    };
    // The last map is not written yet: the first read's ask is parked at the lifecycle manager.
    for (let mapId = 0; mapId < JOB.maps - 1; mapId++) await writeMap(mapId);
    const giveUp = new AbortController();
    const first = shuffle.read(0, { signal: giveUp.signal });
    const firstFailed = first.then(
      () => assert.fail('the read given up returned records'),
      (error: unknown) => error,
    );
    await pollUntil(
      () => asked.length === 1,
      () => `asks so far: ${asked.length}`,
    );
    // Each iteration claims the file group as it starts (synchronously): all of these wait for the first read's ask.
    const waiting = [...Array(JOB.partitions - 1).keys()].map((i) => {
      const reader = shuffle.reader(i + 1);
      const records: Uint8Array[] = [];
      const iterator = reader.chunks()[Symbol.asyncIterator]();
      const drain = async (next: Promise<IteratorResult<Iterable<Uint8Array>>>): Promise<number> => {
        for (let item = await next; item.done !== true; item = await iterator.next())
          records.push(...item.value);
        return records.length;
      };
      return drain(iterator.next());
    });
    assert.equal(asked.length, 1, 'the waiting reads asked');
    giveUp.abort(new Error('the engine killed the task'));
    assert.equal((await within(firstFailed, 'the given-up read')) instanceof Error, true);
    // The oldest waiter asks in its place; its answer, once the map stage ends, serves every other waiter.
    await pollUntil(
      () => asked.length === 2,
      () => `asks so far: ${asked.length}`,
    );
    await writeMap(JOB.maps - 1);
    const counts = await within(Promise.all(waiting), 'the waiting reads');
    counts.forEach((n, i) => assert.equal(n, JOB.maps * JOB.recordsPerPartition, `partition ${i + 1}`));
    assert.equal(asked.length, 2, `the lifecycle manager was asked ${asked.length} times`);
    assert.equal(fromCache.length, JOB.partitions - 2);
  });
});
