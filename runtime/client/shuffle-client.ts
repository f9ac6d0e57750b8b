import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { mapTaskConfigFrom } from '../../conf/machine-configs.ts';
import type { ResolvedConfig } from '../../conf/index.ts';
import { FileGroupCache } from '../../core/machines/client/file-group-cache.ts';
import {
  initialMapTaskState,
  mapTaskMachine,
  type MapTaskState,
} from '../../core/machines/client/map-task.ts';
import { recordsIn } from '../../core/machines/client/records.ts';
import { lifecycleManagerNodeId, mapTaskNodeId } from '../../core/protocol/node-ids.ts';
import type { Release } from '../../core/release/version.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import type { Logger } from '../log.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';
import type { NodeNetwork } from '../process/node-network.ts';
import { clientLogger } from './client-log.ts';
import { clientNetwork } from './client-network.ts';
import { clientConfig, clientRelease, parseHostPort, type ClientOptions } from './client-config.ts';
import {
  AuthenticationFailedError,
  ClientClosedError,
  ClientReleaseRefusedError,
  MapTaskFailedError,
  SvcClientError,
} from './errors.ts';
import { clusterShuffleId } from './stage-attempts.ts';
import {
  readableOf,
  StreamingPartitionRead,
  type PartitionReader,
  type ReadOptions,
} from './partition-reader.ts';

export type { PartitionReader, ReadOptions } from './partition-reader.ts';

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

export interface MapWriter {
  /** Adds one record to a partition. Records are pushed when the writer closes. */
  write(partitionId: number, record: Uint8Array): void;
  /** Pushes everything, then ends the attempt (MapperEnd). Rejects with MapTaskFailedError. */
  close(): Promise<MapResult>;
  /**
   * Bytes the workers have acknowledged so far, as pushed: each record with its 4-byte length prefix (for progress;
   * `writtenBytes` counts the records alone).
   */
  acknowledgedBytes(): number;
  readonly writtenBytes: number;
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
  const release = clientRelease(options);
  const conf = clientConfig(release, options);
  const executorId = options.executorId ?? `executor-${process.pid}-${randomBytes(3).toString('hex')}`;
  const logger = clientLogger(options.logger, options.logLevel, { role: 'executor', node: executorId });
  // The executor acts for the application it was given, proving the application's secret (svc.auth.enabled).
  const { network, refusal, authRefusal } = clientNetwork(executorId, release, conf, logger, {
    appId: options.appId,
    ...(options.secret === undefined ? {} : { secret: options.secret }),
  });
  network.addresses.set(
    lifecycleManagerNodeId(options.appId),
    parseHostPort(options.lifecycleManager, 'lifecycle manager'),
  );
  const context: ExecutorContext = {
    appId: options.appId,
    release,
    conf,
    network,
    logger,
    fileGroups: new FileGroupCache(),
    closed: false,
    refusal,
    authRefusal,
  };
  let closing: Promise<void> | undefined;
  const shapes = new Map<number, ShuffleShape>();
  return {
    release,
    shuffle(shuffleId, shape, options = {}) {
      const clusterId = clusterShuffleId(shuffleId, options.stageAttempt ?? 0);
      if (!(
        Number.isInteger(shape.maps) &&
        shape.maps > 0 &&
        Number.isInteger(shape.partitions) &&
        shape.partitions > 0
      )) {
        throw new SvcClientError(
          `a shuffle needs a positive whole number of maps and partitions, got ${JSON.stringify(shape)}`,
        );
      }
      const declared = shapes.get(shuffleId);
      if (declared !== undefined && !sameShape(declared, shape)) {
        throw new SvcClientError(
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
    context.logger.info(
      { event: 'executor.closed', executor: executorId, stoppedTasks: stopped },
      `executor ${executorId} closed with ${stopped} running task(s)`,
    );
  }
  await context.network.transport.close();
}

function sameShape(a: ShuffleShape, b: ShuffleShape): boolean {
  return a.maps === b.maps && a.partitions === b.partitions;
}

interface ExecutorContext {
  readonly appId: string;
  readonly release: Release;
  readonly conf: ResolvedConfig;
  readonly network: NodeNetwork;
  readonly logger: Logger;
  readonly fileGroups: FileGroupCache;
  /**
   * Set when the executor closes. Every task runs as a node on `network.host` (with `stop`): closing stops them
   * there, so that their waits reject with ClientClosedError, and the host refuses tasks started later.
   */
  closed: boolean;
  refusal(): string | undefined;
  /** Why a server refused this executor's proof (or requires authentication it has off), once one has. */
  authRefusal(): string | undefined;
}

class ShuffleHandle implements Shuffle {
  constructor(
    private readonly context: ExecutorContext,
    readonly shuffleId: number,
    private readonly shape: ShuffleShape,
  ) {}

  writer(mapId: number, attemptId = 0): MapWriter {
    if (!(Number.isInteger(mapId) && mapId >= 0 && mapId < this.shape.maps)) {
      throw new SvcClientError(
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
      throw new SvcClientError(
        `partition ${partitionId} is outside shuffle ${this.shuffleId}'s 0..${this.shape.partitions - 1}`,
      );
    }
  }
}

class TaskWriter implements MapWriter {
  private readonly records: Uint8Array[][];
  private written = 0;
  private count = 0;
  private closing = false;
  private driver: NodeDriver<MapTaskState> | undefined;

  constructor(
    private readonly context: ExecutorContext,
    private readonly shuffleId: number,
    private readonly shape: ShuffleShape,
    private readonly mapId: number,
    private readonly attemptId: number,
  ) {
    this.records = Array.from({ length: shape.partitions }, () => []);
  }

  get writtenBytes(): number {
    return this.written;
  }

  write(partitionId: number, record: Uint8Array): void {
    if (this.closing)
      throw new ClientClosedError(`map ${this.mapId} attempt ${this.attemptId} is already closed`);
    const partition = this.records[partitionId];
    if (partition === undefined) {
      throw new SvcClientError(
        `partition ${partitionId} is outside shuffle ${this.shuffleId}'s 0..${this.shape.partitions - 1}`,
      );
    }
    partition.push(record);
    this.written += record.byteLength;
    this.count += 1;
  }

  acknowledgedBytes(): number {
    let bytes = 0;
    for (const partition of this.driver?.state.partitions ?? []) bytes += partition.acknowledged.bytes;
    return bytes;
  }

  async close(): Promise<MapResult> {
    const context = this.context;
    if (this.closing)
      throw new ClientClosedError(`map ${this.mapId} attempt ${this.attemptId} is already closed`);
    if (context.closed) throw new ClientClosedError('the shuffle client is closed');
    this.closing = true;
    const id = mapTaskNodeId(context.appId, this.shuffleId, this.mapId, this.attemptId);
    if (context.network.host.has(id)) {
      throw new SvcClientError(`map ${this.mapId} attempt ${this.attemptId} is already running here`);
    }
    const config = {
      ...mapTaskConfigFrom(
        context.conf,
        { shuffleId: this.shuffleId, mapId: this.mapId, attemptId: this.attemptId },
        { numMappers: this.shape.maps, numPartitions: this.shape.partitions },
        this.records,
        context.appId,
      ),
      // The attempt's frames are written whole before they are sent: no need to zero their buffer first.
      allocate: unzeroedBytes,
    };
    const driver = new NodeDriver<MapTaskState>(
      id,
      mapTaskMachine,
      initialMapTaskState(config),
      context.release,
      {
        send: (envelope) => context.network.transport.send(envelope),
        logger: context.logger,
      },
    );
    this.driver = driver;
    this.records.length = 0; // the task holds them now
    context.network.host.add(driver);
    driver.start(new Map());
    try {
      const end = await driver.until((state) =>
        state.phase === 'won' || state.phase === 'lost' || state.phase === 'failed' ? state : undefined,
      );
      if (end?.phase === 'won' || end?.phase === 'lost') {
        return { outcome: end.phase, bytes: this.written, records: this.count };
      }
      const refusal = context.refusal();
      if (refusal !== undefined) throw new ClientReleaseRefusedError(refusal);
      const authRefusal = context.authRefusal();
      if (authRefusal !== undefined) throw new AuthenticationFailedError(authRefusal);
      throw new MapTaskFailedError(
        `map ${this.mapId} attempt ${this.attemptId} of shuffle ${this.shuffleId} failed: ` +
          `${end?.error ?? 'the client was closed'}. Run the attempt again (its data is not part of the shuffle).`,
      );
    } finally {
      driver.stop();
      context.network.host.remove(id);
    }
  }
}
