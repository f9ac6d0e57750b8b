// The streaming map writer on a real cluster: argument checks, back-pressure (write() === false, then 'drain'),
// records written from slices of a reused buffer, the stream.Writable adapter, and an idempotent close().
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { clientSide, type ClientSide } from '../testing/small-job.ts';
import { SvcArgumentError } from './errors.ts';
import type { MapRecordChunk } from './shuffle-client.ts';
import { within } from '../testing/deadline.ts';

const BUDGET = 64 * 1024;
const PARTITIONS = 8;

/** Record `i` of a map: its index in 4 bytes, then filler that depends on it. */
function fillRecord(target: Uint8Array, at: number, length: number, i: number): void {
  new DataView(target.buffer, target.byteOffset + at, 4).setUint32(0, i);
  target.fill(i % 251, at + 4, at + length);
}

function indexOf(record: Uint8Array): number {
  return new DataView(record.buffer, record.byteOffset, 4).getUint32(0);
}

describe('map writer', () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1 });
    client = await clientSide(cluster.masterUrl, {
      conf: {
        'svc.client.push.maxUnacknowledgedBytes': String(BUDGET),
        'svc.client.push.buffer.max.size': '8k',
      },
    });
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('refuses a record that is not bytes, a partition outside the shuffle and a slice past the record', async () => {
    const writer = client!.executor.shuffle(1, { maps: 1, partitions: PARTITIONS }).writer(0);
    const untyped = writer as unknown as { write(...args: unknown[]): boolean };
    assert.throws(() => untyped.write(0, 'a string'), {
      name: 'SvcArgumentError',
      message: /a record is a Uint8Array \(or Buffer\), not a string/,
    });
    assert.throws(() => untyped.write(0, [1, 2]), SvcArgumentError);
    assert.throws(() => writer.write(PARTITIONS, new Uint8Array(1)), {
      name: 'SvcArgumentError',
      message: /partition 8 is outside shuffle 1's 0..7/,
    });
    // One mistake, one class: the same partition out of range is the same error from a read, and so is a map.
    const shuffle = client!.executor.shuffle(1, { maps: 1, partitions: PARTITIONS });
    assert.throws(() => shuffle.reader(PARTITIONS), {
      name: 'SvcArgumentError',
      message: /partition 8 is outside shuffle 1's 0..7/,
    });
    await assert.rejects(shuffle.read(-1), SvcArgumentError);
    assert.throws(() => shuffle.writer(1), { name: 'SvcArgumentError', message: /map 1 is outside/ });
    assert.throws(() => writer.write(1.5, new Uint8Array(1)), SvcArgumentError);
    assert.throws(
      () => writer.write(0, new Uint8Array(4), 2, 3),
      /offset 2 and length 3 do not fit a record of 4/,
    );
    assert.throws(() => writer.write(0, new Uint8Array(4), -1), SvcArgumentError);
    assert.equal(writer.writtenBytes, 0, 'nothing refused was taken');
    const first = writer.close();
    assert.equal(writer.close(), first, 'close() twice returns the same promise');
    assert.deepEqual(await first, { outcome: 'won', bytes: 0, records: 0 });
    assert.deepEqual(await writer.close(), { outcome: 'won', bytes: 0, records: 0 });
  });

  it('pushes back once it holds its budget and drains; records from a reused buffer arrive intact', async () => {
    const shuffle = client!.executor.shuffle(2, { maps: 1, partitions: PARTITIONS });
    const writer = shuffle.writer(0);
    const recordBytes = 200;
    const count = 10_000; // 2 MB: about 30 times the budget
    // One buffer of a few records, overwritten as the map goes: the writer copies what it is given.
    const scratch = new Uint8Array(4 * recordBytes);
    let pushedBack = 0;
    for (let i = 0; i < count; i += 1) {
      const at = (i % 4) * recordBytes;
      fillRecord(scratch, at, recordBytes, i);
      if (!writer.write(i % PARTITIONS, scratch, at, recordBytes)) {
        pushedBack += 1;
        assert.ok(writer.needsDrain, 'writer.needsDrain');
        await within(once(writer, 'drain'), `the writer's 'drain' after record ${i}`);
        assert.ok(!writer.needsDrain, '!writer.needsDrain');
      }
    }
    assert.ok(pushedBack >= 10, `the writer pushed back ${pushedBack} times`);
    // The task started at the first write: the workers acknowledged most of the map before close().
    assert.ok(
      writer.acknowledgedBytes() >= count * (recordBytes + 4) - 2 * BUDGET,
      'writer.acknowledgedBytes() >= count * (recordBytes + 4) - 2 * BUDGET',
    );
    const result = await writer.close();
    assert.deepEqual(result, { outcome: 'won', bytes: count * recordBytes, records: count });
    assert.equal(writer.acknowledgedBytes(), count * (recordBytes + 4));
    for (let p = 0; p < PARTITIONS; p += 1) {
      const records = await shuffle.read(p);
      const indexes = records.map(indexOf).sort((a, b) => a - b);
      assert.deepEqual(
        indexes,
        Array.from({ length: count / PARTITIONS }, (_, k) => k * PARTITIONS + p),
      );
      for (const record of records) {
        const i = indexOf(record);
        assert.ok(
          record.subarray(4).every((b) => b === i % 251),
          `record ${i} arrived intact`,
        );
      }
    }
  });

  it('with room left, asks for a turn of the event loop when its pushes wait in a socket queue', async () => {
    // A budget of 1 GiB: room never runs out in 64 MiB (nor does the unsent eighth, 128 MiB). What the loop writes
    // between turns goes to the worker's socket, which takes a few MiB: the rest waits in its queue, and the writer
    // says false once a staging buffer handed over leaves it there.
    const roomy = await clientSide(cluster!.masterUrl, {
      conf: { 'svc.client.push.maxUnacknowledgedBytes': '1g' },
    });
    try {
      const shuffle = roomy.executor.shuffle(4, { maps: 1, partitions: PARTITIONS });
      const writer = shuffle.writer(0);
      const record = new Uint8Array(64 * 1024);
      const count = 1024; // 64 MiB, partition after partition
      let turns = 0;
      for (let i = 0; i < count; i += 1) {
        fillRecord(record, 0, record.length, i);
        if (!writer.write(Math.floor((i * PARTITIONS) / count), record)) {
          turns += 1;
          await within(once(writer, 'drain'), `the writer's 'drain' after record ${i}`);
        }
      }
      assert.ok(turns >= 1, 'the loop was given a turn');
      assert.ok(turns <= 64, `at most a turn per staging buffer (1 MiB), not ${turns}`);
      assert.deepEqual(await writer.close(), {
        outcome: 'won',
        bytes: count * record.length,
        records: count,
      });
      const last = await shuffle.read(PARTITIONS - 1);
      assert.deepEqual(
        last.map(indexOf),
        Array.from({ length: count / PARTITIONS }, (_, k) => ((PARTITIONS - 1) * count) / PARTITIONS + k),
      );
    } finally {
      await roomy.close();
    }
  });

  it('takes { partition, record } chunks as an object-mode stream.Writable with back-pressure', async () => {
    const shuffle = client!.executor.shuffle(3, { maps: 1, partitions: PARTITIONS });
    const writer = shuffle.writer(0);
    const count = 4_000;
    function* chunks(): Generator<MapRecordChunk> {
      for (let i = 0; i < count; i += 1) {
        const record = new Uint8Array(100);
        fillRecord(record, 0, 100, i);
        yield { partition: i % PARTITIONS, record };
      }
    }
    await pipeline(Readable.from(chunks()), writer.writable());
    assert.deepEqual(await writer.close(), { outcome: 'won', bytes: count * 100, records: count });
    const records = await shuffle.read(5);
    assert.equal(records.length, count / PARTITIONS);
    assert.deepEqual(
      records.map(indexOf).sort((a, b) => a - b),
      Array.from({ length: count / PARTITIONS }, (_, k) => k * PARTITIONS + 5),
    );
  });
});
