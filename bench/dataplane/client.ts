/**
 * A client process of the data-plane benchmark (`node --import tsx bench/dataplane/client.ts`, driven over IPC by
 * bench/dataplane.bench.ts, ./protocol.ts): the process that pushes and reads, separate from the worker or sink it
 * measures.
 *
 * - svc: an application (lifecycle manager) and an executor of svc's client library in this process; a push runs
 *   the workload's maps `mapSlots` at a time (`shuffle.writer(map).write(p, record)`, `close()`), then waits until
 *   the lifecycle manager holds the shuffle's committed file group (so a disk tier's final flush is inside the
 *   measurement, as the bare disk sink's fdatasync is); a read streams `shuffle.reader(p).chunks()` over every partition.
 *   The round trip of every push request is measured here by wrapping Transport.send and NodeHost.deliver (the
 *   library is unchanged: the wrappers only note times).
 * - bare: the same framed stream (./workload.ts) written to sink sockets, and bare TCP reads of files.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import type { Envelope } from '../../core/machines/effects.ts';
import { startApplication, type Application } from '../../runtime/client/application.ts';
import { connectExecutor, type ShuffleClient } from '../../runtime/client/shuffle-client.ts';
import { useNativeChecksum } from '../../runtime/driver/native-checksum.ts';
import { NodeHost } from '../../runtime/driver/node-host.ts';
import { Transport } from '../../runtime/transport/transport.ts';
import type { WireEnvelope } from '../../runtime/wire/index.ts';
import type {
  AppCoordinates,
  Endpoint,
  FromClient,
  Percentiles,
  PushResult,
  ReadResult,
  SinkAck,
  ToClient,
  WriteResult,
} from './protocol.ts';
import { mapIdsOf, mapMessages, RecordSource, recordBytesOf } from './workload.ts';

/** Bytes a bare client lets its socket buffer hold before it waits for 'drain' (about svc's pushes in flight). */
const BARE_WINDOW = 4 * 2 ** 20;
const COMMIT_TIMEOUT_MS = 300_000;

function send(message: FromClient): void {
  process.send?.(message);
}

// ------------------------------------------------------------------ push round trips (svc)

const pushCounters = { messages: 0, batches: 0, payloadBytes: 0 };
const sentAt = new Map<string, number>();
let rtt: RecordableHistogram = createHistogram();

/* eslint-disable @typescript-eslint/unbound-method -- wrapped and called with the instance as `this` */
const transportSend = Transport.prototype.send;
const hostDeliver = NodeHost.prototype.deliver;
/* eslint-enable @typescript-eslint/unbound-method */

Transport.prototype.send = function send(this: Transport, envelope: WireEnvelope): void {
  const message = envelope.message;
  if (
    (message.type === 'PushData' || message.type === 'PushMergedData') &&
    envelope.requestId !== undefined
  ) {
    sentAt.set(`${envelope.from}#${envelope.requestId}`, performance.now());
    pushCounters.messages += 1;
    if (message.type === 'PushData') {
      pushCounters.batches += 1;
      pushCounters.payloadBytes += message.payload.byteLength;
    } else {
      pushCounters.batches += message.batches.length;
      for (const batch of message.batches) pushCounters.payloadBytes += batch.payload.byteLength;
    }
  }
  transportSend.call(this, envelope);
};

NodeHost.prototype.deliver = function deliver(this: NodeHost, envelope: Envelope): boolean {
  const type = envelope.message.type;
  if (
    envelope.inReplyTo !== undefined &&
    (type === 'PushDataResponse' || type === 'PushMergedDataResponse')
  ) {
    const key = `${envelope.to}#${envelope.inReplyTo}`;
    const at = sentAt.get(key);
    if (at !== undefined) {
      sentAt.delete(key);
      rtt.record(Math.max(1, Math.round((performance.now() - at) * 1000)));
    }
  }
  return hostDeliver.call(this, envelope);
};

function percentilesOf(histogram: RecordableHistogram, unitMs: number): Percentiles {
  return {
    count: histogram.count,
    p50: histogram.percentile(50) * unitMs,
    p90: histogram.percentile(90) * unitMs,
    p99: histogram.percentile(99) * unitMs,
    max: histogram.max * unitMs,
    mean: histogram.mean * unitMs,
  };
}

// ------------------------------------------------------------------ svc

let svc: { app: Application; executor: ShuffleClient } | undefined;
/** An executor without an application (svc-executor): a map's or a reducer's process. */
let executorOnly: ShuffleClient | undefined;

async function svcInit(message: Extract<ToClient, { type: 'svc-init' }>): Promise<AppCoordinates> {
  const app = await startApplication({ master: message.master, conf: message.conf, logLevel: 'error' });
  const executor = connectExecutor({
    lifecycleManager: app.lifecycleManager,
    appId: app.appId,
    conf: message.conf,
    logLevel: 'error',
  });
  svc = { app, executor };
  return {
    lifecycleManager: app.lifecycleManager,
    appId: app.appId,
    ...(app.secret === undefined ? {} : { secret: app.secret }),
  };
}

function svcExecutor(message: Extract<ToClient, { type: 'svc-executor' }>): void {
  executorOnly = connectExecutor({ ...message.app, conf: message.conf, logLevel: 'error' });
}

function requireSvc(): { app: Application; executor: ShuffleClient } {
  if (svc === undefined) throw new Error('svc-init first');
  return svc;
}

function requireExecutor(): ShuffleClient {
  const executor = executorOnly ?? svc?.executor;
  if (executor === undefined) throw new Error('svc-init or svc-executor first');
  return executor;
}

/** Runs `task` over `items`, `slots` at a time. */
async function pool<T>(items: readonly T[], slots: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.max(1, slots) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await task(item);
    }),
  );
}

async function committed(app: Application, shuffleId: number): Promise<void> {
  const deadline = performance.now() + COMMIT_TIMEOUT_MS;
  for (;;) {
    const phase = app.state().shuffles.get(shuffleId)?.phase;
    if (phase === 'committed') return;
    if (phase === 'data-lost') throw new Error(`shuffle ${shuffleId} lost data at its commit`);
    if (performance.now() > deadline) throw new Error(`shuffle ${shuffleId} not committed (${phase})`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

async function svcPush(message: Extract<ToClient, { type: 'svc-push' }>): Promise<PushResult> {
  const { app, executor } = requireSvc();
  const workload = message.workload;
  const source = new RecordSource(workload);
  const shuffle = executor.shuffle(message.shuffleId, {
    maps: workload.maps,
    partitions: workload.partitions,
  });
  pushCounters.messages = 0;
  pushCounters.batches = 0;
  pushCounters.payloadBytes = 0;
  sentAt.clear();
  rtt = createHistogram();
  const started = performance.now();
  await pool(mapIdsOf(workload), message.mapSlots, async (mapId) => {
    const writer = shuffle.writer(mapId);
    // A map writes with back-pressure, as an application does: it waits for 'drain' when the writer holds its budget.
    const records = source.recordsOf(mapId);
    const { partitions, recordsPerPartition } = workload;
    for (let k = 0; k < partitions * recordsPerPartition; k += 1) {
      // Partition after partition (a sorting writer), or record k to partition k mod partitions (`--spread`).
      const partitionId = workload.spread === true ? k % partitions : Math.floor(k / recordsPerPartition);
      const i = workload.spread === true ? Math.floor(k / partitions) : k % recordsPerPartition;
      if (!writer.write(partitionId, records.record(partitionId, i))) await once(writer, 'drain');
    }
    const result = await writer.close();
    if (result.outcome !== 'won') throw new Error(`map ${mapId} ${result.outcome}`);
  });
  await committed(app, message.shuffleId);
  const ms = performance.now() - started;
  const files =
    app
      .state()
      .shuffles.get(message.shuffleId)
      ?.fileGroup?.fileGroups.flatMap((g) => g.files) ?? [];
  const bytesByStorage: Record<string, number> = {};
  for (const file of files) {
    bytesByStorage[file.storage.type] = (bytesByStorage[file.storage.type] ?? 0) + file.bytes;
  }
  // Outside the timed push: the measurement that follows waits for the workers to drop it.
  if (message.release === true) await app.unregisterShuffle(message.shuffleId);
  return {
    type: 'pushed',
    ms,
    recordBytes: recordBytesOf(workload),
    messages: pushCounters.messages,
    batches: pushCounters.batches,
    streamBytes: pushCounters.payloadBytes,
    rtt: percentilesOf(rtt, 1e-3),
    committed: {
      files: files.length,
      bytes: files.reduce((sum, file) => sum + file.bytes, 0),
      bytesByStorage,
    },
  };
}

/** Bytes of the pool streaming maps cut their records from: many distinct records, a fixed footprint. */
const WRITE_POOL_BYTES = 4 * 2 ** 20;

async function svcWriteMaps(message: Extract<ToClient, { type: 'svc-write-maps' }>): Promise<WriteResult> {
  const executor = requireExecutor();
  const shuffle = executor.shuffle(message.shuffleId, { maps: message.maps, partitions: message.partitions });
  const { recordBytes, partitions } = message;
  const source = randomBytes(Math.max(WRITE_POOL_BYTES, 2 * recordBytes));
  const offsets = Math.floor((source.length - recordBytes) / 8);
  const recordsPerMap = Math.floor(message.bytesPerMap / recordBytes);
  let records = 0;
  const started = performance.now();
  await pool(message.mapIds, message.slots, async (mapId) => {
    const writer = shuffle.writer(mapId);
    for (let i = 0; i < recordsPerMap; i += 1) {
      // Round-robin over the partitions: every partition's batch fills at once, the worst case for a map's memory.
      const offset = (((mapId * 7919 + i) * 4099) % offsets) * 8;
      if (!writer.write(i % partitions, source, offset, recordBytes)) await once(writer, 'drain');
    }
    const result = await writer.close();
    if (result.outcome !== 'won') throw new Error(`map ${mapId} ${result.outcome}`);
    records += recordsPerMap;
  });
  const ms = performance.now() - started;
  return { type: 'wrote', ms, recordBytes: records * recordBytes, records };
}

async function svcReadPartition(
  message: Extract<ToClient, { type: 'svc-read-partition' }>,
): Promise<ReadResult> {
  const executor = requireExecutor();
  const shuffle = executor.shuffle(message.shuffleId, { maps: message.maps, partitions: message.partitions });
  let bytes = 0;
  let records = 0;
  const started = performance.now();
  for await (const chunk of shuffle.reader(message.partitionId).chunks()) {
    for (const record of chunk) {
      bytes += record.byteLength;
      records += 1;
    }
  }
  return { type: 'read', ms: performance.now() - started, bytes, records };
}

async function svcRead(message: Extract<ToClient, { type: 'svc-read' }>): Promise<ReadResult> {
  const { executor } = requireSvc();
  const workload = message.workload;
  const shuffle = executor.shuffle(message.shuffleId, {
    maps: workload.maps,
    partitions: workload.partitions,
  });
  let bytes = 0;
  let records = 0;
  const started = performance.now();
  await pool(
    Array.from({ length: workload.partitions }, (_, p) => p),
    message.slots,
    async (partitionId) => {
      // It keeps no record past its chunk: the reader may read later chunks into consumed ones' memory.
      for await (const chunk of shuffle.reader(partitionId).chunks({ reuseChunkMemory: true })) {
        for (const record of chunk) {
          bytes += record.byteLength;
          records += 1;
        }
      }
    },
  );
  return { type: 'read', ms: performance.now() - started, bytes, records };
}

// ------------------------------------------------------------------ bare

async function connected(endpoint: Endpoint): Promise<Socket> {
  const socket = connect({ host: endpoint.host, port: endpoint.port });
  await once(socket, 'connect');
  socket.setNoDelay(true);
  return socket;
}

function ackOf(socket: Socket): Promise<SinkAck> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(JSON.parse(text.trim()) as SinkAck);
      } catch {
        reject(new Error(`no acknowledgement from the sink (got '${text.slice(0, 200)}')`));
      }
    });
  });
}

async function barePush(message: Extract<ToClient, { type: 'bare-push' }>): Promise<PushResult> {
  // The CRC-32 every svc process uses (each NodeDriver installs it): the same encoders, at the same cost.
  useNativeChecksum();
  const workload = message.workload;
  const source = new RecordSource(workload);
  const names = {
    appId: `app-${Date.now()}-b4e5f6`,
    shuffleId: 1,
    sinkNodeIds: message.sinks.map((sink, i) => `${sink.host}:${40_000 + i}:${sink.port}:41000:42000`),
  };
  const requestIds = { next: 1 };
  let messages = 0;
  let batches = 0;
  let streamBytes = 0;
  const started = performance.now();
  const sockets = await Promise.all(message.sinks.map(connected));
  const acks = sockets.map(ackOf);
  for (const ack of acks) ack.catch(() => undefined); // awaited below
  for (const mapId of mapIdsOf(workload)) {
    const records = source.recordsOf(mapId);
    for (const pushed of mapMessages(workload, records, mapId, names, requestIds)) {
      const socket = sockets[pushed.sink]!;
      // As runtime/transport/connection.ts writes a frame: its pieces in one corked write.
      socket.cork();
      for (const piece of pushed.pieces) socket.write(piece);
      socket.uncork();
      messages += 1;
      batches += pushed.batches;
      streamBytes += pushed.bytes;
      if (socket.writableLength > BARE_WINDOW) await once(socket, 'drain');
    }
  }
  for (const socket of sockets) socket.end();
  const answers = await Promise.all(acks);
  const ms = performance.now() - started;
  answers.forEach((ack, i) => {
    const sent = sockets[i]!.bytesWritten;
    if (ack.bytes !== sent) throw new Error(`sink ${i} received ${ack.bytes} of ${sent} bytes`);
  });
  return {
    type: 'pushed',
    ms,
    recordBytes: recordBytesOf(workload),
    messages,
    batches,
    streamBytes,
    acks: answers,
  };
}

/** One connection's file reader: asks for a file, resolves with its size once all its bytes arrived. */
function fileReader(socket: Socket): (name: string) => Promise<number> {
  let head = Buffer.alloc(0);
  let left = -1;
  let size = 0;
  let done: ((bytes: number) => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    let at = 0;
    while (at < chunk.length) {
      if (left < 0) {
        const take = Math.min(8 - head.length, chunk.length - at);
        head = Buffer.concat([head, chunk.subarray(at, at + take)]);
        at += take;
        if (head.length < 8) break;
        size = Number(head.readBigUInt64BE(0));
        left = size;
        head = Buffer.alloc(0);
      }
      const take = Math.min(left, chunk.length - at);
      left -= take;
      at += take;
      if (left === 0) {
        left = -1;
        const resolve = done;
        done = undefined;
        resolve?.(size);
      }
    }
  });
  return (name) =>
    new Promise<number>((resolve) => {
      done = resolve;
      socket.write(`${name}\n`);
    });
}

async function bareRead(message: Extract<ToClient, { type: 'bare-read' }>): Promise<ReadResult> {
  const byServer = new Map<string, { server: Endpoint; files: string[] }>();
  for (const { server, file } of message.files) {
    const key = `${server.host}:${server.port}`;
    const entry = byServer.get(key) ?? { server, files: [] };
    entry.files.push(file);
    byServer.set(key, entry);
  }
  let bytes = 0;
  const started = performance.now();
  await Promise.all(
    [...byServer.values()].map(async ({ server, files }) => {
      const sockets = await Promise.all(
        Array.from({ length: Math.max(1, Math.min(message.slots, files.length)) }, () => connected(server)),
      );
      await Promise.all(
        sockets.map(async (socket) => {
          const read = fileReader(socket);
          for (let name = files.shift(); name !== undefined; name = files.shift()) {
            const size = await read(name); // not `bytes += await …`: that would add to a stale total
            bytes += size;
          }
          socket.end();
        }),
      );
    }),
  );
  return { type: 'read', ms: performance.now() - started, bytes, records: 0 };
}

// ------------------------------------------------------------------ the channel

async function handle(message: ToClient): Promise<FromClient | undefined> {
  switch (message.type) {
    case 'svc-init':
      return { type: 'svc-ready', pid: process.pid, app: await svcInit(message) };
    case 'svc-executor':
      svcExecutor(message);
      return { type: 'ready', pid: process.pid };
    case 'svc-write-maps':
      return svcWriteMaps(message);
    case 'svc-read-partition':
      return svcReadPartition(message);
    case 'svc-push':
      return svcPush(message);
    case 'svc-read':
      return svcRead(message);
    case 'bare-push':
      return barePush(message);
    case 'bare-read':
      return bareRead(message);
    case 'exit':
      await executorOnly?.close().catch(() => undefined);
      await svc?.executor.close().catch(() => undefined);
      await svc?.app.close().catch(() => undefined);
      process.exit(0);
  }
}

let queue: Promise<void> = Promise.resolve();
process.on('message', (message: ToClient) => {
  queue = queue.then(async () => {
    try {
      const answer = await handle(message);
      if (answer !== undefined) send(answer);
    } catch (error) {
      send({
        type: 'failed',
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
  });
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid });
