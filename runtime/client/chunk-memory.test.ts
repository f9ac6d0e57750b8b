// A read's chunks and their memory (PartitionReader.chunks): with `reuseChunkMemory` later chunks are read into the
// memory of consumed ones, and each chunk's records are still exactly what the map wrote; without it every chunk has
// memory of its own, and records kept past their chunk stay intact to the end of the read and after.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../cluster/local-cluster.ts';
import { within } from '../testing/deadline.ts';
import { clientSide, recordOf, type ClientSide } from '../testing/small-job.ts';

/** One map writes 8 MiB into one partition, served in chunks of 512 KiB: 16 chunks, 2 fetched ahead at most. */
const RECORDS = 8192;
const RECORD_BYTES = 1024;
const CHUNK = '512k';
const READ_AHEAD = 2;

const decoder = new TextDecoder();
const expected = Array.from({ length: RECORDS }, (_, i) =>
  decoder.decode(recordOf(0, 0, 0, i, RECORD_BYTES)),
);

describe("a read's chunk memory", () => {
  let cluster: LocalCluster | undefined;
  let client: ClientSide | undefined;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1, workerConf: [`svc.shuffle.chunk.size=${CHUNK}`] });
    client = await clientSide(cluster.masterUrl, {
      conf: { 'svc.client.fetch.maxReqsInFlight': String(READ_AHEAD), 'svc.shuffle.chunk.size': CHUNK },
    });
    for (const shuffleId of [0, 1]) {
      const writer = client.executor.shuffle(shuffleId, { maps: 1, partitions: 1 }).writer(0);
      for (let i = 0; i < RECORDS; i += 1) writer.write(0, recordOf(0, 0, 0, i, RECORD_BYTES));
      await writer.close();
    }
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('is reused with reuseChunkMemory, each chunk holding the right records while it is consumed', async () => {
    const reader = client!.executor.shuffle(0, { maps: 1, partitions: 1 }).reader(0);
    const seen: string[] = [];
    const memories = new Set<ArrayBufferLike>();
    let chunks = 0;
    await within(
      (async () => {
        for await (const chunk of reader.chunks({ reuseChunkMemory: true })) {
          chunks += 1;
          for (const record of chunk) {
            memories.add(record.buffer);
            seen.push(decoder.decode(record));
          }
        }
      })(),
      'the read with reuseChunkMemory',
    );
    assert.ok(chunks > 2 * READ_AHEAD, `only ${chunks} chunks: the partition must span several read-aheads`);
    assert.ok(
      memories.size < chunks,
      `${chunks} chunks came in ${memories.size} distinct buffers: none was read into a consumed chunk's memory`,
    );
    assert.deepEqual(
      seen.sort(),
      [...expected].sort(),
      'the records read are the records written, each once',
    );
    assert.equal(reader.recordsRead, RECORDS);
  });

  it('is fresh for every chunk by default: records kept past their chunk stay intact', async () => {
    const reader = client!.executor.shuffle(0, { maps: 1, partitions: 1 }).reader(0);
    const kept: Uint8Array[] = [];
    const memories = new Set<ArrayBufferLike>();
    let chunks = 0;
    await within(
      (async () => {
        for await (const chunk of reader.chunks()) {
          chunks += 1;
          for (const record of chunk) {
            memories.add(record.buffer);
            kept.push(record); // a view, not a copy: it must outlive its chunk
          }
        }
      })(),
      'the read without reuseChunkMemory',
    );
    // Another read with reuse afterwards must not take the memory these views still use.
    for await (const chunk of client!.executor
      .shuffle(0, { maps: 1, partitions: 1 })
      .reader(0)
      .chunks({ reuseChunkMemory: true })) {
      for (const record of chunk) assert.equal(record.byteLength, RECORD_BYTES);
    }
    assert.equal(memories.size, chunks, `${chunks} chunks shared ${memories.size} buffers`);
    assert.deepEqual(
      kept.map((record) => decoder.decode(record)).sort(),
      [...expected].sort(),
      'records kept past their chunk still hold what the map wrote',
    );
  });

  it("keeps a default read's records intact while a read with reuseChunkMemory runs beside it", async () => {
    const keeping = client!.executor.shuffle(0, { maps: 1, partitions: 1 }).reader(0);
    const reusing = client!.executor.shuffle(1, { maps: 1, partitions: 1 }).reader(0);
    const kept: Uint8Array[] = [];
    const seen: string[] = [];
    await within(
      Promise.all([
        (async () => {
          for await (const chunk of keeping.chunks()) for (const record of chunk) kept.push(record);
        })(),
        (async () => {
          for await (const chunk of reusing.chunks({ reuseChunkMemory: true })) {
            for (const record of chunk) seen.push(decoder.decode(record));
          }
        })(),
      ]),
      'the two reads',
    );
    assert.deepEqual(seen.sort(), [...expected].sort(), 'the reusing read got the records written');
    assert.deepEqual(
      kept.map((record) => decoder.decode(record)).sort(),
      [...expected].sort(),
      "the default read's records were not overwritten by the reusing read's chunks",
    );
  });
});
