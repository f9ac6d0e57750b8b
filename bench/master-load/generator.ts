/**
 * The load generator of bench/master-load.bench.ts (`node --import tsx bench/master-load/generator.ts`, driven over
 * IPC, ./protocol.ts): simulated workers and applications speaking svc's real wire to one server, a master or the
 * bare echo server (./echo.ts). Each simulated node has its own connection and says its own hello, then sends the
 * envelopes a real one sends, encoded by runtime/wire (the control codec the servers use) and cut from the stream
 * by its FrameReader:
 *
 * - a worker: RegisterWorker, then a WorkerHeartbeat every interval from a random phase, listing the shuffle keys
 *   the master placed on it (as a real worker reports the shuffles it holds);
 * - an application (its lifecycle manager, `lm-<appId>`): RegisterApplication, an ApplicationHeartbeat every
 *   interval, and RequestSlots for every partition of a new shuffle, which is the master's part of a RegisterShuffle
 *   (the lifecycle manager then reserves the slots on the workers, which this master-only load leaves out);
 *   UnregisterShuffle of its oldest past the shuffles it keeps.
 *
 * Against the echo server every answer is the request itself, matched by its request id.
 */
import { connect, type Socket } from 'node:net';
import { maskOf } from '../../core/domain/storage.ts';
import { shuffleKey } from '../../core/domain/ids.ts';
import type { DiskInfo, WorkerId } from '../../core/domain/worker.ts';
import { workerKey } from '../../core/domain/worker.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { lifecycleManagerNodeId, masterNodeId } from '../../core/protocol/node-ids.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import {
  decodeFrame,
  encodeEnvelope,
  encodeHello,
  FrameReader,
  frameLimit,
  HANDSHAKE_LIMIT,
  PONG_FRAME,
  type Hello,
  type WireEnvelope,
} from '../../runtime/wire/index.ts';
import type { Counts, FromGenerator, LoadShape, Percentiles, ToGenerator } from './protocol.ts';

const HOST = '127.0.0.1';
const MASTER = masterNodeId();
/** svc.network.frame.maxSize's default order: answers of 1,000 replicated partitions are far below it. */
const FRAME_LIMIT = frameLimit(64 * 2 ** 20);
/** Workers registering at once: a cluster's workers do not all start in the same millisecond either. */
const REGISTER_CONCURRENCY = 64;
const TiB = 2 ** 40;

function send(message: FromGenerator): void {
  process.send?.(message);
}

/** Milliseconds, sorted ascending, summarised. */
export function percentiles(samples: readonly number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  const mean = sorted.length === 0 ? 0 : sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1), mean };
}

/** One simulated node's connection: its hello, then requests matched to answers by request id. */
class NodeConnection {
  private readonly reader = new FrameReader(HANDSHAKE_LIMIT);
  private readonly pending = new Map<number, (envelope: WireEnvelope) => void>();
  private nextRequestId = 1;
  private accepted!: () => void;
  private failed!: (error: Error) => void;
  readonly ready: Promise<void>;

  private constructor(
    private readonly socket: Socket,
    readonly nodeId: string,
  ) {
    this.ready = new Promise((resolve, reject) => {
      this.accepted = resolve;
      this.failed = reject;
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.received(chunk));
    socket.on('error', (error) => this.failed(error));
    socket.on('close', () => {
      const error = new Error(`${nodeId}: connection closed`);
      this.failed(error);
      if (!closing && this.pending.size > 0) fail(error);
    });
  }

  static async open(port: number, hello: Hello): Promise<NodeConnection> {
    const socket = connect({ host: HOST, port });
    const connection = new NodeConnection(socket, hello.nodeId);
    socket.once('connect', () => socket.write(encodeHello(hello)));
    await connection.ready;
    return connection;
  }

  private received(chunk: Buffer): void {
    for (const body of this.reader.push(chunk)) {
      const frame = decodeFrame(body);
      switch (frame.kind) {
        case 'helloReply':
          if (!frame.reply.accepted) {
            this.failed(new Error(`${this.nodeId}: hello refused: ${frame.reply.message}`));
            return;
          }
          this.reader.setLimit(FRAME_LIMIT);
          this.accepted();
          break;
        case 'envelope': {
          // The master answers with inReplyTo; the echo server sends the request back with its requestId.
          const id = frame.envelope.inReplyTo ?? frame.envelope.requestId;
          const waiter = id === undefined ? undefined : this.pending.get(id);
          if (waiter !== undefined) {
            this.pending.delete(id!);
            waiter(frame.envelope);
          }
          break;
        }
        case 'ping':
          this.socket.write(PONG_FRAME);
          break;
        case 'hello':
        case 'authChallenge':
        case 'authProof':
        case 'pong':
          // Not sent to a connecting side that proves nothing (authentication is off) and sends no pings.
          break;
      }
    }
  }

  /** Sends `message` as a request; resolves with the answer and its round trip in milliseconds. */
  request(message: Message): Promise<{ answer: Message; ms: number }> {
    const requestId = this.nextRequestId++;
    const pieces = encodeEnvelope({ from: this.nodeId, to: MASTER, requestId, message });
    const started = performance.now();
    return new Promise((resolve) => {
      this.pending.set(requestId, (envelope) =>
        resolve({ answer: envelope.message, ms: performance.now() - started }),
      );
      this.socket.cork();
      for (const piece of pieces) this.socket.write(piece);
      this.socket.uncork();
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

// ------------------------------------------------------------------ the load

let closing = false;
let shape: LoadShape | undefined;
let port = 0;
const timers = new Set<NodeJS.Timeout>();
const connections: NodeConnection[] = [];
const counts = {
  heartbeats: 0,
  appHeartbeats: 0,
  registerShuffles: 0,
  refusals: 0,
  firstRefusal: undefined as string | undefined,
};
const heartbeatRtts: number[] = [];

function countsNow(): Counts {
  return { ...counts, ...(counts.firstRefusal === undefined ? {} : { firstRefusal: counts.firstRefusal }) };
}

function refused(what: string, answer: Message): void {
  counts.refusals += 1;
  counts.firstRefusal ??= `${what}: ${JSON.stringify(answer).slice(0, 300)}`;
}

function fail(error: unknown): void {
  send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}

/** Runs `tick` every `intervalMs`, the first time after a random part of it (so that nodes do not beat together). */
function every(intervalMs: number, tick: () => void): void {
  const first = setTimeout(() => {
    timers.delete(first);
    tick();
    const timer = setInterval(tick, intervalMs);
    timers.add(timer);
  }, Math.random() * intervalMs);
  timers.add(first);
}

interface SimulatedWorker {
  readonly id: WorkerId;
  readonly connection: NodeConnection;
  /** The shuffles the master placed on this worker, as it reports them in its heartbeats. */
  readonly shuffleKeys: Set<string>;
}

const workers = new Map<string, SimulatedWorker>();

function disks(slots: number): DiskInfo[] {
  return [
    {
      mountPoint: '/data0',
      type: 'HDD',
      usableBytes: 4 * TiB,
      totalBytes: 8 * TiB,
      status: 'HEALTHY',
      avgFlushTimeNs: 0,
      avgFetchTimeNs: 0,
      activeSlots: slots,
    },
  ];
}

async function startWorker(index: number): Promise<void> {
  // Distinct hosts on loopback's /8; the master never connects to a worker, so nothing listens there.
  const id: WorkerId = {
    host: `127.${1 + (index >> 16)}.${(index >> 8) & 255}.${index & 255}`,
    rpcPort: 9097,
    pushPort: 9098,
    fetchPort: 9099,
    replicatePort: 9100,
  };
  const key = workerKey(id);
  const connection = await NodeConnection.open(port, {
    role: 'worker',
    release: CURRENT_RELEASE,
    nodeId: key,
  });
  connections.push(connection);
  const { answer } = await connection.request({
    type: 'RegisterWorker',
    worker: id,
    disks: disks(0),
    networkLocation: `/rack-${index % 20}`,
  });
  if (answer.type === 'RegisterWorkerResponse' && !answer.success) refused('RegisterWorker', answer);
  const worker: SimulatedWorker = { id, connection, shuffleKeys: new Set() };
  workers.set(key, worker);
  every(shape!.heartbeatIntervalMs, () => {
    connection
      .request({
        type: 'WorkerHeartbeat',
        worker: id,
        disks: disks(worker.shuffleKeys.size),
        activeShuffleKeys: [...worker.shuffleKeys],
        highWorkload: false,
        state: 'Normal',
      })
      .then(({ answer, ms }) => {
        counts.heartbeats += 1;
        heartbeatRtts.push(ms);
        if (answer.type === 'WorkerHeartbeatResponse') {
          if (!answer.registered) refused('WorkerHeartbeat', answer);
          for (const expired of answer.expiredShuffleKeys) worker.shuffleKeys.delete(expired);
        }
      }, fail);
  });
}

async function startWorkers(): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < shape!.workers) await startWorker(next++);
  };
  await Promise.all(Array.from({ length: REGISTER_CONCURRENCY }, lane));
}

interface SimulatedApp {
  readonly appId: string;
  readonly connection: NodeConnection;
  readonly live: number[];
  nextShuffle: number;
}

const apps: SimulatedApp[] = [];
let registerRtts: number[] = [];

async function startApp(index: number): Promise<SimulatedApp> {
  const appId = `bench-app-${index}`;
  const connection = await NodeConnection.open(port, {
    role: 'client',
    release: CURRENT_RELEASE,
    nodeId: lifecycleManagerNodeId(appId),
    application: appId,
  });
  connections.push(connection);
  const { answer } = await connection.request({
    type: 'RegisterApplication',
    appId,
    user: 'bench',
    hostname: HOST,
  });
  if (answer.type === 'StatusResponse' && answer.status !== 'SUCCESS') {
    refused('RegisterApplication', answer);
  }
  const app: SimulatedApp = { appId, connection, live: [], nextShuffle: 0 };
  every(shape!.appHeartbeatIntervalMs, () => {
    connection
      .request({ type: 'ApplicationHeartbeat', appId, bytesWritten: 0, fileCount: 0 })
      .then(() => (counts.appHeartbeats += 1), fail);
  });
  return app;
}

const partitionIds = (): number[] => Array.from({ length: shape!.partitions }, (_, i) => i);

/** Registers one more shuffle of the application, then lets its oldest go past the ones it keeps. */
async function registerShuffle(app: SimulatedApp): Promise<void> {
  const shuffleId = app.nextShuffle++;
  const { answer, ms } = await app.connection.request({
    type: 'RequestSlots',
    appId: app.appId,
    shuffleId,
    partitionIds: partitionIds(),
    replicate: shape!.replicate,
    rackAware: false,
    availableTypes: maskOf(['HDD']),
    excludedWorkers: [],
    maxWorkers: 10_000,
  });
  registerRtts.push(ms);
  counts.registerShuffles += 1;
  if (answer.type === 'RequestSlotsResponse') {
    if (answer.status !== 'SUCCESS') refused('RequestSlots', answer);
    const key = shuffleKey(app.appId, shuffleId);
    for (const resource of answer.workerResource) {
      if (resource.primaries.length + resource.replicas.length === 0) continue;
      workers.get(workerKey(resource.worker))?.shuffleKeys.add(key);
    }
  }
  app.live.push(shuffleId);
  while (app.live.length > shape!.liveShufflesPerApp) {
    const oldest = app.live.shift()!;
    const { answer: done } = await app.connection.request({
      type: 'UnregisterShuffle',
      appId: app.appId,
      shuffleId: oldest,
    });
    if (done.type === 'StatusResponse' && done.status !== 'SUCCESS') {
      refused('UnregisterShuffle', done);
    }
  }
}

async function burst(): Promise<FromGenerator> {
  apps.push(...(await Promise.all(Array.from({ length: shape!.apps }, (_, i) => startApp(i)))));
  registerRtts = [];
  await Promise.all(apps.map((app) => registerShuffle(app)));
  return { type: 'registered', registerShuffle: percentiles(registerRtts), counts: countsNow() };
}

async function steady(seconds: number, intervalMs: number): Promise<FromGenerator> {
  registerRtts = [];
  const inFlight = new Set<Promise<void>>();
  const ticking: NodeJS.Timeout[] = [];
  for (const app of apps) {
    const tick = () => {
      const registering = registerShuffle(app).catch(fail);
      inFlight.add(registering);
      void registering.finally(() => inFlight.delete(registering));
    };
    const first = setTimeout(() => {
      tick();
      ticking.push(setInterval(tick, intervalMs));
    }, Math.random() * intervalMs);
    ticking.push(first);
  }
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  for (const timer of ticking) clearTimeout(timer);
  await Promise.all(inFlight);
  return { type: 'registered', registerShuffle: percentiles(registerRtts), counts: countsNow() };
}

async function handle(message: ToGenerator): Promise<FromGenerator | undefined> {
  switch (message.type) {
    case 'workers': {
      shape = message.shape;
      port = message.port;
      const started = performance.now();
      await startWorkers();
      counts.heartbeats = 0;
      heartbeatRtts.length = 0;
      return { type: 'workers-registered', ms: performance.now() - started, counts: countsNow() };
    }
    case 'counts':
      return { type: 'counts', counts: countsNow(), heartbeatRtt: percentiles(heartbeatRtts) };
    case 'burst':
      return burst();
    case 'steady':
      return steady(message.seconds, message.shuffleIntervalMs);
    case 'exit':
      closing = true;
      for (const timer of timers) clearTimeout(timer);
      for (const connection of connections) connection.close();
      send({ type: 'exiting' });
      process.exit(0);
  }
}

process.on('message', (message: ToGenerator) => {
  handle(message).then((answer) => {
    if (answer !== undefined) send(answer);
  }, fail);
});
send({ type: 'ready' });
