// The streaming partition reader on real processes: a reducer in its own process reads a partition far larger than
// its read-ahead budget and its resident memory grows by at most the budget plus a margin; a read of a partition
// one of whose maps never ran fails at its deadline naming that map, and stops at once when aborted.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { LocalCluster } from './cluster/local-cluster.ts';
import { startApplication } from './client/application.ts';
import { ReadAbortedError, ReadTimeoutError } from './client/errors.ts';
import { connectExecutor } from './client/shuffle-client.ts';
import { scrapeGauge } from './metrics/testing.ts';
import { pollUntil } from './testing/poll.ts';
import { clientSide, recordsOf, type ClientSide } from './testing/small-job.ts';
import { STARTUP_WAIT_MS } from './cluster/server-process.ts';
import { within } from './testing/deadline.ts';

const MiB = 1024 * 1024;
const TSX = import.meta.resolve('tsx');
const CHILD = new URL('./testing/read-partition-child.ts', import.meta.url).pathname;

/** The partition: 2 maps of 96 MiB each into partition 0, records of 16 KiB cut from one random pool. */
const MAPS = 2;
const RECORD_BYTES = 16 * 1024;
const RECORDS_PER_MAP = (96 * MiB) / RECORD_BYTES;
const CHUNK_BYTES = 8 * MiB; // svc.shuffle.chunk.size's default
const READ_AHEAD = 2;
/** What the process may grow by beyond its read-ahead budget: the transport's buffers, garbage not yet collected. */
const MARGIN = 64 * MiB;

const pool = new Uint8Array(2 * MiB);
for (let i = 0; i < pool.length; i += 1) pool[i] = (i * 2654435761) >>> 24;

function recordAt(mapId: number, index: number): Uint8Array {
  const offset = ((mapId * 7919 + index * 4099) * 8) % (pool.length - RECORD_BYTES);
  return pool.subarray(offset, offset + RECORD_BYTES);
}

describe('the streaming partition reader', () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await LocalCluster.start({ workers: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  it('reads a 192 MiB partition in its own process within its read-ahead budget plus 64 MiB', async (t) => {
    const conf = { 'svc.client.fetch.maxReqsInFlight': String(READ_AHEAD) };
    const client = await clientSide(cluster.masterUrl, { conf });
    try {
      const shuffle = client.executor.shuffle(0, { maps: MAPS, partitions: 1 });
      let sum = 0;
      for (let mapId = 0; mapId < MAPS; mapId += 1) {
        const writer = shuffle.writer(mapId);
        for (let i = 0; i < RECORDS_PER_MAP; i += 1) {
          const record = recordAt(mapId, i);
          writer.write(0, record);
          sum = (sum + crc32(record)) % 0x100000000;
        }
        await writer.close();
      }
      const task = {
        lifecycleManager: client.app.lifecycleManager,
        appId: client.app.appId,
        ...(client.app.secret === undefined ? {} : { secret: client.app.secret }),
        conf,
        shuffleId: 0,
        maps: MAPS,
        partitions: 1,
        partitionId: 0,
        // The reducer is slower than the network: a reader without a bound would run ahead by the whole partition.
        computeMsPerChunk: 50,
      };
      const child = spawn(process.execPath, ['--expose-gc', '--import', TSX, CHILD, JSON.stringify(task)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
      child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
      const [code] = (await within(once(child, 'exit'), 'the reader process to end', STARTUP_WAIT_MS)) as [
        number | null,
      ];
      assert.equal(code, 0, `the reader process failed: ${stderr}`);
      const line = stdout
        .trim()
        .split('\n')
        .find((l) => l.startsWith('{"records"'));
      assert.ok(line !== undefined, `no result from the reader process: ${stdout} ${stderr}`);
      const result = JSON.parse(line) as {
        records: number;
        bytes: number;
        sum: number;
        before: number;
        peak: number;
      };
      assert.equal(result.records, MAPS * RECORDS_PER_MAP);
      assert.equal(result.bytes, MAPS * RECORDS_PER_MAP * RECORD_BYTES);
      assert.equal(result.sum, sum, 'the records read are the records written');
      const grew = result.peak - result.before;
      t.diagnostic(
        `reader RSS ${(result.before / MiB).toFixed(0)} MiB before, grew by ${(grew / MiB).toFixed(1)} MiB`,
      );
      const limit = READ_AHEAD * CHUNK_BYTES + MARGIN;
      assert.ok(
        grew <= limit,
        `reading ${result.bytes / MiB} MiB grew the reader's RSS by ${(grew / MiB).toFixed(1)} MiB, over its ` +
          `read-ahead budget (${READ_AHEAD} chunks of ${CHUNK_BYTES / MiB} MiB) + ${MARGIN / MiB} MiB`,
      );
    } finally {
      await client.close();
    }
  });

  it('closes its stream on the worker when the consumer gives up before the end', async () => {
    const openStreams = (): Promise<number> =>
      scrapeGauge(cluster.workerHttpUrl(0), 'ActiveChunkStreamCount');
    const closed: Record<string, unknown>[] = [];
    const logger = {
      error: () => {},
      warn: () => {},
      debug: (fields: Record<string, unknown>) => {
        if (fields.event === 'reader.streamClosed') closed.push(fields);
      },
    };
    const conf = { 'svc.client.fetch.maxReqsInFlight': '1' };
    const app = await startApplication({ master: cluster.masterUrl, conf });
    const executor = connectExecutor({
      lifecycleManager: app.lifecycleManager,
      appId: app.appId,
      ...(app.secret === undefined ? {} : { secret: app.secret }),
      conf,
      logger,
      logLevel: 'debug',
    });
    try {
      // 24 MiB: three chunks of 8 MiB, so that a reader stopping after the first leaves chunks unasked.
      const shuffle = executor.shuffle(0, { maps: 1, partitions: 1 });
      const writer = shuffle.writer(0);
      for (let i = 0; i < (24 * MiB) / RECORD_BYTES; i += 1) {
        if (!writer.write(0, recordAt(0, i)))
          await within(once(writer, 'drain'), `'drain' after record ${i}`);
      }
      await writer.close();
      let read = 0;
      for await (const record of shuffle.reader(0)) {
        read += record.length;
        // With one chunk fetched ahead, the third chunk is unasked: the worker's stream is open.
        assert.equal(await openStreams(), 1, "the worker holds the reader's stream open");
        break;
      }
      assert.equal(read, RECORD_BYTES);
      assert.equal(closed.length, 1, 'one CloseStream, to the worker of the open stream');
      assert.match(String(closed[0]!.worker), /:/);
      // The worker hears it: its stream is released (it would stay open, its last chunk never asked, without it).
      await pollUntil(
        async () => (await openStreams()) === 0,
        () => 'the worker released the stream',
      );
    } finally {
      await executor.close();
      await app.close();
    }
  });

  describe('on a partition one of whose maps never ran', () => {
    let client: ClientSide;
    const job = { maps: 2, partitions: 1, recordsPerPartition: 10 };
    before(async () => {
      // The lifecycle manager answers a parked GetReducerFileGroup after svc.rpc.askTimeout / 2 (1 s here).
      client = await clientSide(cluster.masterUrl, { conf: { 'svc.rpc.askTimeout': '2s' } });
      const writer = client.executor.shuffle(0, job).writer(0);
      for (const record of recordsOf(job, 0, 0)[0]!) writer.write(0, record);
      await writer.close(); // map 1 never runs
    });
    after(async () => {
      await client?.close();
    });

    it('fails at its deadline, naming the map it waits for', async () => {
      const reader = client.executor.shuffle(0, job).reader(0, { timeoutMs: 6_000 });
      await assert.rejects(
        async () => {
          for await (const record of reader) assert.fail(`no record may come, got ${record.length} bytes`);
        },
        (error: Error) => {
          assert.ok(error instanceof ReadTimeoutError, String(error));
          assert.match(error.message, /did not finish within 6000 ms/);
          assert.match(error.message, /waiting for map 1\b/);
          return true;
        },
      );
    });

    it('stops at once when its signal aborts, and the partition can be read again', async () => {
      const controller = new AbortController();
      const reader = client.executor.shuffle(0, job).reader(0, { signal: controller.signal });
      const iterator = reader[Symbol.asyncIterator]();
      const pending = iterator.next();
      const reason = new Error('the engine cancelled the task');
      controller.abort(reason);
      await assert.rejects(pending, (error: Error) => {
        assert.ok(error instanceof ReadAbortedError, String(error));
        assert.equal(error.name, 'AbortError');
        assert.equal(error.cause, reason);
        return true;
      });
      // The aborted read let go of the partition: a new read of it starts (and is aborted before it begins).
      const again = client.executor.shuffle(0, job).reader(0, { signal: controller.signal });
      await assert.rejects(again[Symbol.asyncIterator]().next(), ReadAbortedError);
    });
  });

  it('gives the records through a stream.Readable, with back-pressure, exactly once', async () => {
    const client = await clientSide(cluster.masterUrl);
    try {
      const job = { maps: 3, partitions: 2, recordsPerPartition: 200, recordBytes: 100 };
      const shuffle = client.executor.shuffle(0, job);
      for (let mapId = 0; mapId < job.maps; mapId += 1) {
        const writer = shuffle.writer(mapId);
        recordsOf(job, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
        await writer.close();
      }
      const got: string[] = [];
      await pipeline(
        shuffle.readable(1),
        new Writable({
          objectMode: true,
          highWaterMark: 4,
          write(record: Uint8Array, _encoding, done) {
            got.push(new TextDecoder().decode(record));
            setImmediate(done); // a slow consumer: the Readable must wait for it
          },
        }),
      );
      const want = Array.from({ length: job.maps }, (_, m) => recordsOf(job, m, 0)[1]!)
        .flat()
        .map((r) => new TextDecoder().decode(r));
      assert.deepEqual(got.sort(), want.sort());
    } finally {
      await client.close();
    }
  });
});
