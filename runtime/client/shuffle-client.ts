import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Writable, type Readable } from 'node:stream';
import { mapTaskConfigFrom } from '../../conf/machine-configs.ts';
import { FileGroupCache } from '../../core/machines/client/file-group-cache.ts';
import { LocationCache } from '../../core/machines/client/location-cache.ts';
import {
  initialMapTaskState,
  mapTaskHasRoom,
  mapTaskMachine,
  type MapTaskState,
} from '../../core/machines/client/map-task.ts';
import { RECORD_LENGTH_BYTES, recordsIn } from '../../core/machines/client/records.ts';
import { lifecycleManagerNodeId, mapTaskNodeId } from '../../core/protocol/node-ids.ts';
import type { Release } from '../../core/release/version.ts';
import type { StatusCode } from '../../core/domain/status.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';
import { putU32 } from '../../core/protocol/big-endian.ts';
import { executorMapBuffers, MAP_BUFFERS_IDLE_MS, type MapBuffers } from './map-buffers.ts';
import { clientNetwork } from './client-network.ts';
import { parseHostPort, resolveClientSettings, type ClientOptions } from './client-config.ts';
import {
  AuthenticationFailedError,
  ClientClosedError,
  ClientReleaseRefusedError,
  MapTaskFailedError,
  QuotaExceededError,
  SvcArgumentError,
  SvcClientError,
} from './errors.ts';
import { checkedClusterShuffleId } from './stage-attempts.ts';
import { ChunkBodies } from './chunk-bodies.ts';
import {
  readableOf,
  StreamingPartitionRead,
  type PartitionReader,
  type ReadOptions,
  type ReaderContext,
} from './partition-reader.ts';

export type { ChunkOptions, PartitionReader, ReadOptions } from './partition-reader.ts';

export interface ExecutorOptions extends ClientOptions {
  /** `host:port` of the application's lifecycle manager (`Application.lifecycleManager`). */
  readonly lifecycleManager: string;
  readonly appId: string;
  /** A name for this executor in handshakes and logs; default `executor-<pid>-<random>`. */
  readonly executorId?: string;
}

export interface ShuffleShape {
  readonly maps: number;
  readonly partitions: number;
}

/** How a map attempt ended: `won` (its data is what readers get) or `lost` (another attempt of the map won). */
export interface MapResult {
  readonly outcome: 'won' | 'lost';
  readonly bytes: number;
  readonly records: number;
}

/**
 * A map attempt's output, written record by record and pushed while the map runs, the way a Node writable stream
 * takes data: `write()` returns false once the task holds its budget of unacknowledged bytes
 * (`svc.client.push.maxUnacknowledgedBytes`), and the writer emits `'drain'` when there is room again. A map that
 * waits for `'drain'` whenever `write()` says false (or writes through `writable()`, which does) holds at most
 * about its budget, whatever it writes (docs/client.md).
 */
export interface MapWriter extends EventEmitter {
  /**
   * Adds one record to a partition: `record`, or its `length` bytes from `offset` (a slice of a larger buffer,
   * so that a map need not allocate per record). The bytes are copied before `write` returns: the caller may reuse
   * its buffer at once. Returns false when the task holds its budget: wait for `'drain'` before writing more.
   * Throws SvcClientError on a bad argument, and MapTaskFailedError once the attempt has failed.
   */
  write(partitionId: number, record: Uint8Array, offset?: number, length?: number): boolean;
  /**
   * Pushes what is left, then ends the attempt (MapperEnd). Rejects with MapTaskFailedError. Calling it again
   * returns the same promise.
   */
  close(): Promise<MapResult>;
  /** An object-mode `stream.Writable` of `{ partition, record }` chunks over this writer; `end()` closes it. */
  writable(): Writable;
  /**
   * Bytes the workers have acknowledged so far, as pushed: each record with its 4-byte length prefix (for progress;
   * `writtenBytes` counts the records alone).
   */
  acknowledgedBytes(): number;
  readonly writtenBytes: number;
  /** Whether the last `write()` returned false and `'drain'` has not been emitted since. */
  readonly needsDrain: boolean;
}

/** A chunk of `MapWriter.writable()`: one record for one partition. */
export interface MapRecordChunk {
  readonly partition: number;
  readonly record: Uint8Array;
}

/**
 * A partition's records, verified end to end before the first is handed out, each made as it is iterated: a reducer
 * that does not keep them leaves only short-lived garbage (docs/client.md). Every iteration gives the same records
 * in the same order. The whole partition is in memory: for small partitions; `reader()` streams.
 */
export interface PartitionRecords extends Iterable<Uint8Array> {
  readonly count: number;
}

export interface Shuffle {
  readonly shuffleId: number;
  writer(mapId: number, attemptId?: number): MapWriter;
  /**
   * The records of one partition, streamed: every winning map's exactly once, each batch checked before its records
   * are handed out, at most `svc.client.fetch.maxReqsInFlight` chunks in memory whatever the partition's size. The
   * read starts at the first `next()`; the count check at the end makes the iteration throw when it fails.
   */
  reader(partitionId: number, options?: ReadOptions): PartitionReader;
  /** The same stream as a `stream.Readable` in object mode (one record per item), with back-pressure. */
  readable(partitionId: number, options?: ReadOptions): Readable;
  /** The whole partition, verified end to end before the first record is handed out (held in memory). */
  records(partitionId: number, options?: ReadOptions): Promise<PartitionRecords>;
  /** The whole partition in one array (a view per record, all alive at once): for small partitions. */
  read(partitionId: number, options?: ReadOptions): Promise<readonly Uint8Array[]>;
}

/** Which stage attempt of the shuffle a handle writes and reads (`application.rerunMapStage`). */
export interface ShuffleOptions {
  /** Default 0; after `application.rerunMapStage(id)`, the attempt it returned. */
  readonly stageAttempt?: number;
}

export interface ShuffleClient {
  readonly release: Release;
  /**
   * A handle on stage attempt `stageAttempt` (default 0) of the application's shuffle `shuffleId` (0 to 2^20 - 1).
   * Every call for one shuffle id must give the same shape: another is refused (SvcClientError).
   */
  shuffle(shuffleId: number, shape: ShuffleShape, options?: ShuffleOptions): Shuffle;
  /**
   * Stops the executor's running tasks (a writer's pending `close()` and a pending read reject with
   * ClientClosedError; tasks started later throw it) and closes its connections. A second call gets the first's
   * promise.
   */
  close(): Promise<void>;
}

/**
 * The executor side of an application: runs its map attempts (writers) and reduce tasks (readers) as the core's
 * task machines, talking to the lifecycle manager and the workers. One per executor process; it holds the file
 * groups of the shuffles it read, so that its later reduce tasks do not ask the lifecycle manager again.
 */
export function connectExecutor(options: ExecutorOptions): ShuffleClient {
  const executorId = options.executorId ?? `executor-${process.pid}-${randomBytes(3).toString('hex')}`;
  const client = resolveClientSettings(options, { role: 'executor', node: executorId });
  const chunkBodies = new ChunkBodies(client);
  const mapBuffers = executorMapBuffers(client.conf);
  const idleBuffers = setInterval(() => mapBuffers.dropIdle(), MAP_BUFFERS_IDLE_MS);
  idleBuffers.unref();
  // The executor acts for the application it was given, proving the application's secret (svc.auth.enabled).
  const { network, refusal, authRefusal } = clientNetwork({
    nodeId: executorId,
    client,
    identity: { appId: options.appId },
    receiveBodies: chunkBodies.pool,
  });
  network.addresses.set(
    lifecycleManagerNodeId(options.appId),
    parseHostPort(options.lifecycleManager, 'lifecycle manager'),
  );
  const context: ExecutorContext = {
    appId: options.appId,
    client,
    network,
    chunkBodies,
    mapBuffers,
    fileGroups: new FileGroupCache(),
    locations: new LocationCache(),
    closed: false,
    refusal,
    authRefusal,
  };
  let closing: Promise<void> | undefined;
  const shapes = new Map<number, ShuffleShape>();
  return {
    release: client.release,
    shuffle(shuffleId, shape, options = {}) {
      const clusterId = checkedClusterShuffleId(shuffleId, options.stageAttempt ?? 0);
      if (!(
        Number.isInteger(shape.maps) &&
        shape.maps > 0 &&
        Number.isInteger(shape.partitions) &&
        shape.partitions > 0
      )) {
        throw new SvcArgumentError(
          `a shuffle needs a positive whole number of maps and partitions, got ${JSON.stringify(shape)}`,
        );
      }
      const declared = shapes.get(shuffleId);
      if (declared !== undefined && !sameShape(declared, shape)) {
        throw new SvcArgumentError(
          `shuffle ${shuffleId} was declared with ${declared.maps} maps and ${declared.partitions} partitions; it ` +
            `cannot be declared again with ${shape.maps} and ${shape.partitions}. A shuffle id names one shuffle ` +
            'for the whole application: use a new id for a shuffle of another shape',
        );
      }
      shapes.set(shuffleId, { maps: shape.maps, partitions: shape.partitions });
      // The cluster knows each stage attempt as a shuffle of its own (./stage-attempts.ts).
      return new ShuffleHandle(context, clusterId, shape);
    },
    close() {
      chunkBodies.close();
      clearInterval(idleBuffers);
      closing ??= closeExecutor(context, executorId);
      return closing;
    },
  };
}

/**
 * Closes an executor once (a second close gets the first one's promise): every running task is stopped through the
 * host, its pending `close()` or read rejecting with ClientClosedError, and the connections are closed.
 */
async function closeExecutor(context: ExecutorContext, executorId: string): Promise<void> {
  context.closed = true;
  const stopped = context.network.host.close(
    new ClientClosedError(
      `executor ${executorId} was closed while this task ran; its map attempt or read did not finish`,
    ),
  );
  if (stopped > 0) {
    context.client.logger.info(
      { event: 'executor.closed', executor: executorId, stoppedTasks: stopped },
      `executor ${executorId} closed with ${stopped} running task(s)`,
    );
  }
  await context.network.transport.close();
}

function sameShape(a: ShuffleShape, b: ShuffleShape): boolean {
  return a.maps === b.maps && a.partitions === b.partitions;
}

/** What the executor's writers and readers share: the reader's context, with `closed` set by `close()`. */
interface ExecutorContext extends ReaderContext {
  /** The shuffles' locations this executor's map tasks were told and revived to: later tasks start from them. */
  readonly locations: LocationCache;
  /** The map tasks' batch memory, kept from one task for the next (./map-buffers.ts). */
  readonly mapBuffers: MapBuffers;
  /**
   * Set when the executor closes. Every task runs as a node on `network.host` (with `stop`): closing stops them
   * there, so that their waits reject with ClientClosedError, and the host refuses tasks started later.
   */
  closed: boolean;
}

class ShuffleHandle implements Shuffle {
  constructor(
    private readonly context: ExecutorContext,
    readonly shuffleId: number,
    private readonly shape: ShuffleShape,
  ) {}

  writer(mapId: number, attemptId = 0): MapWriter {
    if (!(Number.isInteger(mapId) && mapId >= 0 && mapId < this.shape.maps)) {
      throw new SvcArgumentError(
        `map ${mapId} is outside shuffle ${this.shuffleId}'s 0..${this.shape.maps - 1}`,
      );
    }
    return new TaskWriter(this.context, this.shuffleId, this.shape, mapId, attemptId);
  }

  reader(partitionId: number, options?: ReadOptions): StreamingPartitionRead {
    this.checkPartition(partitionId);
    return new StreamingPartitionRead(this.context, this.shuffleId, partitionId, options);
  }

  readable(partitionId: number, options?: ReadOptions): Readable {
    return readableOf(this.reader(partitionId, options));
  }

  async read(partitionId: number, options?: ReadOptions): Promise<readonly Uint8Array[]> {
    return [...(await this.records(partitionId, options))];
  }

  async records(partitionId: number, options?: ReadOptions): Promise<PartitionRecords> {
    const reader = this.reader(partitionId, options);
    const batches: Uint8Array[] = [];
    // The chunks' records stay views into their batches: kept whole until the read (and its count check) ended.
    for await (const chunk of reader.readyChunks()) batches.push(...chunk.batches);
    const records = recordsIn(batches);
    return { count: reader.recordsRead, [Symbol.iterator]: () => records[Symbol.iterator]() };
  }

  private checkPartition(partitionId: number): void {
    if (this.context.closed) throw new ClientClosedError('the shuffle client is closed');
    if (!(Number.isInteger(partitionId) && partitionId >= 0 && partitionId < this.shape.partitions)) {
      throw new SvcArgumentError(
        `partition ${partitionId} is outside shuffle ${this.shuffleId}'s 0..${this.shape.partitions - 1}`,
      );
    }
  }
}

/**
 * Records are copied into a staging buffer as they are written, encoded as a batch payload lays them out (length,
 * then bytes), and handed to the task (a `records` input) a staging buffer at a time: one step of the machine per
 * record cost more than the copy, and a step given many batches' worth cuts them together, so that they travel
 * merged (with 64 KiB, a map writing partition after partition sent one PushData per batch: 2,164 messages for 256
 * MiB instead of 170). Consecutive records of one partition form one run, which the task copies a batch at a time.
 * 256 KiB rather than 1 MiB: the task copies the staged records into batches while the staging buffer is still in
 * the core's cache (a 2 MiB L2 held neither 1 MiB of staging and the batches it fills); the memory push's client CPU
 * per GiB 1.50-1.58 to 1.39-1.50 s, small batches' 1.01-1.11 to 0.93-1.04 s (docs/performance.md).
 */
export const STAGING_BYTES = 256 * 1024;

class TaskWriter extends EventEmitter implements MapWriter {
  private written = 0;
  private count = 0;
  private closing: Promise<MapResult> | undefined;
  private driver: NodeDriver<MapTaskState> | undefined;
  private settled: Promise<MapTaskState | undefined> | undefined;
  /** Allocated when the task starts: STAGING_BYTES, or the task's budget if smaller (memory stays within twice it). */
  private staging: Uint8Array = new Uint8Array(0);
  private stagingBytes = 0;
  private stagingUsed = 0;
  /** The partition of each run staged, and where each run starts in the staging buffer. */
  private stagedPartitions: number[] = [];
  private runStarts: number[] = [];
  private waitingForRoom = false;

  constructor(
    private readonly context: ExecutorContext,
    private readonly shuffleId: number,
    private readonly shape: ShuffleShape,
    private readonly mapId: number,
    private readonly attemptId: number,
  ) {
    super();
  }

  get writtenBytes(): number {
    return this.written;
  }

  get needsDrain(): boolean {
    return this.waitingForRoom;
  }

  write(partitionId: number, record: Uint8Array, offset?: number, length?: number): boolean {
    if (this.closing !== undefined)
      throw new ClientClosedError(`map ${this.mapId} attempt ${this.attemptId} is already closed`);
    if (!(Number.isInteger(partitionId) && partitionId >= 0 && partitionId < this.shape.partitions)) {
      throw new SvcArgumentError(
        `partition ${String(partitionId)} is outside shuffle ${this.shuffleId}'s 0..${this.shape.partitions - 1}`,
      );
    }
    if (!(record instanceof Uint8Array)) {
      throw new SvcArgumentError(
        `a record is a Uint8Array (or Buffer), not ${describeValue(record)}: encode it first (docs/client.md)`,
      );
    }
    const from = offset ?? 0;
    const size = length ?? record.byteLength - from;
    if (!(
      Number.isInteger(from) &&
      Number.isInteger(size) &&
      from >= 0 &&
      size >= 0 &&
      from + size <= record.byteLength
    )) {
      throw new SvcArgumentError(
        `offset ${String(offset)} and length ${String(length)} do not fit a record of ${record.byteLength} bytes`,
      );
    }
    const driver = this.driver ?? this.startTask();
    this.failIfFailed(driver.state);
    const encoded = RECORD_LENGTH_BYTES + size;
    const handedOver = this.stagingUsed + encoded > this.staging.length;
    if (handedOver) this.flush();
    if (encoded > this.staging.length) this.staging = unzeroedBytes(encoded);
    const at = this.stagingUsed;
    if (this.stagedPartitions[this.stagedPartitions.length - 1] !== partitionId) {
      this.stagedPartitions.push(partitionId);
      this.runStarts.push(at);
    }
    putU32(this.staging, at, size);
    this.staging.set(
      from === 0 && size === record.byteLength ? record : record.subarray(from, from + size),
      at + RECORD_LENGTH_BYTES,
    );
    this.stagingUsed = at + encoded;
    this.written += size;
    this.count += 1;
    if (!mapTaskHasRoom(driver.state)) {
      this.waitingForRoom = true;
      return false;
    }
    if (handedOver && this.context.network.transport.hasQueuedWrites()) {
      this.yieldTurn(driver);
      return false;
    }
    return true;
  }

  /**
   * Asks the map to wait for 'drain', emitted at the next turn of the event loop, when a staging buffer handed to
   * the task leaves pushes waiting in a socket's queue (the kernel's buffer full: the rest is written only when the
   * loop turns). A map writing in a loop that waits only for room would otherwise hold the loop until its budget is
   * reached, its pushes queued and their answers unread, and its worker sat idle while the map wrote
   * (docs/performance.md, "Many partitions"). At most a turn per staging buffer (256 KiB).
   */
  private yieldTurn(driver: NodeDriver<MapTaskState>): void {
    this.waitingForRoom = true;
    setImmediate(() => {
      // An answer in the meantime may have emitted 'drain' already (the watcher below); no room, and it will.
      if (!this.waitingForRoom || !mapTaskHasRoom(driver.state) || this.closing !== undefined) return;
      this.waitingForRoom = false;
      this.emit('drain');
    });
  }

  writable(): Writable {
    return new Writable({
      objectMode: true,
      write: (chunk: MapRecordChunk, _encoding, callback) => {
        try {
          if (this.write(chunk?.partition, chunk?.record)) callback();
          else this.once('drain', () => callback());
        } catch (error) {
          callback(error as Error);
        }
      },
      final: (callback) => {
        this.close().then(
          () => callback(),
          (error: Error) => callback(error),
        );
      },
    });
  }

  acknowledgedBytes(): number {
    let bytes = 0;
    for (const partitionBytes of this.driver?.state.partitions.acknowledgedBytes ?? [])
      bytes += partitionBytes;
    return bytes;
  }

  close(): Promise<MapResult> {
    this.closing ??= this.finish();
    return this.closing;
  }

  /** Starts the attempt's task: it registers the shuffle while the map writes its first records. */
  private startTask(): NodeDriver<MapTaskState> {
    const context = this.context;
    if (context.closed) throw new ClientClosedError('the shuffle client is closed');
    const id = mapTaskNodeId(context.appId, this.shuffleId, this.mapId, this.attemptId);
    if (context.network.host.has(id)) {
      throw new SvcClientError(`map ${this.mapId} attempt ${this.attemptId} is already running here`);
    }
    const registeredLocations = context.locations.lookup(
      context.appId,
      this.shuffleId,
      this.shape.partitions,
    );
    const config = {
      ...mapTaskConfigFrom(
        context.client.conf,
        { shuffleId: this.shuffleId, mapId: this.mapId, attemptId: this.attemptId },
        { numMappers: this.shape.maps, numPartitions: this.shape.partitions },
        context.appId,
      ),
      // Every byte of a batch's buffer is written before it is sent: no need to zero it first. What one task lets
      // go, the next one fills again.
      allocate: context.mapBuffers.allocate,
      giveBack: context.mapBuffers.giveBack,
      // Pushes go to workers, each a process of its own, over sockets: a frame's bytes are copied into the kernel
      // before the answer that acknowledges them can come.
      reuseAcknowledgedFrames: true,
      ...(registeredLocations === undefined ? {} : { registeredLocations }),
    };
    const driver = new NodeDriver<MapTaskState>(
      id,
      mapTaskMachine,
      initialMapTaskState(config),
      context.client.release,
      {
        send: (envelope) => context.network.transport.send(envelope),
        logger: context.client.logger,
      },
    );
    this.driver = driver;
    this.stagingBytes = Math.min(STAGING_BYTES, config.maxUnacknowledgedBytes);
    this.staging = context.mapBuffers.allocate(this.stagingBytes);
    context.network.host.add(driver);
    // 'drain' once room returns after a write said false: emitted after the step, never inside it, so that a map
    // writing from its listener hands the task its records outside the task's step.
    // The locations the task was told at registration, then those it revived to once it won, for the executor's
    // later tasks of the shuffle.
    let told = registeredLocations !== undefined;
    let won = false;
    driver.watch(() => {
      const state = driver.state;
      if ((!told && state.phase === 'pushing') || (!won && state.phase === 'won')) {
        told = true;
        won = state.phase === 'won';
        context.locations.remember(context.appId, this.shuffleId, state.locations);
      }
      if (this.waitingForRoom && mapTaskHasRoom(driver.state)) {
        this.waitingForRoom = false;
        queueMicrotask(() => this.emit('drain'));
      }
    });
    this.settled = driver.until((state) =>
      state.phase === 'won' || state.phase === 'lost' || state.phase === 'failed' ? state : undefined,
    );
    driver.start(new Map());
    return driver;
  }

  /**
   * Hands the staged records to the task, which copies them during its step; the staging buffer is then reused. Were
   * the input queued instead (a write from inside a step of the driver), the next records go to a fresh buffer.
   */
  private flush(): void {
    if (this.stagedPartitions.length === 0) return;
    const driver = this.driver!;
    const before = driver.state;
    const starts = this.runStarts;
    const runs = starts.map((start, i) => this.staging.subarray(start, starts[i + 1] ?? this.stagingUsed));
    driver.input({ kind: 'records', partitionIds: this.stagedPartitions, runs });
    this.stagedPartitions = [];
    this.runStarts = [];
    this.stagingUsed = 0;
    const stepped = driver.state !== before || driver.isStopped;
    if (!stepped || this.staging.length > this.stagingBytes)
      this.staging = this.context.mapBuffers.allocate(this.stagingBytes);
  }

  private failIfFailed(state: MapTaskState): void {
    if (state.phase !== 'failed') return;
    throw this.failure(state.error, state.errorStatus);
  }

  private failure(error: string | undefined, status?: StatusCode): SvcClientError {
    const refusal = this.context.refusal();
    if (refusal !== undefined) return new ClientReleaseRefusedError(refusal);
    const authRefusal = this.context.authRefusal();
    if (authRefusal !== undefined) return new AuthenticationFailedError(authRefusal);
    if (status === 'QUOTA_EXCEEDED') {
      return new QuotaExceededError(
        `map ${this.mapId} attempt ${this.attemptId} of shuffle ${this.shuffleId}: ${error ?? 'over quota'}`,
      );
    }
    return new MapTaskFailedError(
      `map ${this.mapId} attempt ${this.attemptId} of shuffle ${this.shuffleId} failed: ` +
        `${error ?? 'the client was closed'}. Run the attempt again (its data is not part of the shuffle).`,
    );
  }

  private async finish(): Promise<MapResult> {
    const context = this.context;
    if (context.closed) throw new ClientClosedError('the shuffle client is closed');
    const driver = this.driver ?? this.startTask();
    try {
      this.flush();
      driver.input({ kind: 'recordsEnd' });
      const end = await this.settled;
      if (end?.phase === 'won' || end?.phase === 'lost') {
        return { outcome: end.phase, bytes: this.written, records: this.count };
      }
      throw this.failure(end?.error, end?.errorStatus);
    } finally {
      driver.stop();
      context.network.host.remove(driver.id);
      // The writer may outlive its attempt in the application's hands: its staging buffer goes now, to the
      // executor's next map (every run handed over was copied by the task, or the buffer was replaced: flush).
      if (this.staging.length === this.stagingBytes) context.mapBuffers.giveBack(this.staging);
      this.staging = new Uint8Array(0);
      this.stagingBytes = 0;
      // A map still waiting for room hears that there is none to wait for: its next write throws.
      if (this.waitingForRoom) {
        this.waitingForRoom = false;
        this.emit('drain');
      }
    }
  }
}

/** What an argument was, for an error message (untyped JavaScript may pass anything). */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return `a ${value.constructor?.name ?? 'object'}`;
  return `a ${typeof value}`;
}
