import { rerunAdvice } from './stage-attempts.ts';
import { Readable } from 'node:stream';
import { reduceTaskConfigFrom } from '../../conf/machine-configs.ts';
import type { FileGroupAnswer, FileGroupCache } from '../../core/machines/client/file-group-cache.ts';
import {
  chunkRecords,
  closeOnAbandon,
  initialReduceTaskState,
  reduceTaskMachine,
  wantsFileGroup,
  type ReadyChunk,
  type ReduceTaskState,
} from '../../core/machines/client/reduce-task.ts';
import type { Input } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { workerKey } from '../../core/domain/index.ts';
import { reduceTaskNodeId } from '../../core/protocol/node-ids.ts';
import { NodeDriver } from '../driver/node-driver.ts';
import type { NodeNetwork } from '../transport/node-network.ts';
import type { ChunkBodies } from './chunk-bodies.ts';
import type { ClientSettings } from './client-config.ts';
import {
  AuthenticationFailedError,
  ClientClosedError,
  ClientReleaseRefusedError,
  ReadAbortedError,
  ReadTimeoutError,
  ReduceTaskFailedError,
  SvcClientError,
} from './errors.ts';

/** How one read of a partition may go. */
export interface ReadOptions {
  /**
   * The read's deadline, in milliseconds from its first `next()`: past it the iteration throws ReadTimeoutError,
   * whose message names what the read was waiting for (the maps that have not ended, a worker's chunk). None: the
   * read waits as long as the reduce task's own limits allow (svc.rpc.askTimeout, the map stage's end).
   */
  readonly timeoutMs?: number;
  /** Aborting it stops the read: the iteration throws ReadAbortedError (`name` 'AbortError', `cause` the reason). */
  readonly signal?: AbortSignal;
}

/** How `PartitionReader.chunks()` hands its chunks out. */
export interface ChunkOptions {
  /**
   * The caller's word that it keeps no record of a chunk, nor any view of one, once it asks for the next chunk (or
   * stops iterating): the reader may then read a later chunk into the memory of one consumed, instead of fresh
   * memory for every chunk (a few chunks per executor are kept for that, `svc.client.fetch.maxReqsInFlight`
   * chunks' worth). A record kept past its chunk is then overwritten by another chunk's bytes: copy what you keep
   * (`record.slice()`). For consumers that fold each record into their own state as it comes (count, sum, hash,
   * write elsewhere). Default false: every record stays valid for as long as it is referenced.
   */
  readonly reuseChunkMemory?: boolean;
}

/**
 * One partition's records, read as they are iterated: chunk by chunk from the workers, at most
 * `svc.client.fetch.maxReqsInFlight` chunks ahead of the consumer, each batch checked (CRC, whole records) before its
 * records are handed out, every winning map's records exactly once. The count check runs once everything is read:
 * when it fails, the iteration throws after the last record (ReduceTaskFailedError, kind `integrity`), and the
 * engine must discard what the task computed and run it again, as with any reader failure.
 *
 * A record is a view into its chunk's buffer, valid while the iteration goes on; one kept past its chunk keeps the
 * chunk's memory alive (copy it: `record.slice()`). Iterate once: a second iteration throws.
 */
export interface PartitionReader extends AsyncIterable<Uint8Array> {
  /**
   * The records chunk by chunk (fewer promises than one per record): each item is a synchronous iterable of one
   * chunk's records, which the reader counts as consumed when the next item is asked for. With `reuseChunkMemory`
   * (ChunkOptions), a chunk's records are valid only until the next item is asked for.
   */
  chunks(options?: ChunkOptions): AsyncIterable<Iterable<Uint8Array>>;
  /** Records handed out so far. */
  readonly recordsRead: number;
}

/** What a partition read needs of its executor (shuffle-client.ts's ExecutorContext). */
export interface ReaderContext {
  readonly appId: string;
  /** The executor's settings, resolved once (client-config.ts). */
  readonly client: ClientSettings;
  readonly network: NodeNetwork;
  /**
   * The executor's chunk bodies (./chunk-bodies.ts), which its connections read large frames into while a read with
   * `reuseChunkMemory` runs; such a read gives its chunks' bodies back there once consumed. Absent: every chunk is
   * fresh memory.
   */
  readonly chunkBodies?: ChunkBodies;
  readonly fileGroups: FileGroupCache;
  readonly closed: boolean;
  refusal(): string | undefined;
  /** Why a server refused this executor's proof (or requires authentication it has off), once one has. */
  authRefusal(): string | undefined;
}

type Waited = { readonly chunk: ReadyChunk } | { readonly end: true } | { readonly failed: ReduceTaskState };

/**
 * The reads of each executor whose task waits for another task's file-group ask (FileGroupCache.claim), by task:
 * what starts the task once the cache releases it.
 */
const waitingReads = new WeakMap<FileGroupCache, Map<string, () => void>>();

/** Starts the tasks the executor's cache released (each then reads from the cache, or asks on its own). */
function startReleased(cache: FileGroupCache, tasks: readonly string[]): void {
  const waiting = waitingReads.get(cache);
  for (const task of tasks) {
    const begin = waiting?.get(task);
    waiting?.delete(task);
    begin?.();
  }
}

/** A reduce task run for one read, fed by its consumer's pace. */
export class StreamingPartitionRead implements PartitionReader {
  private driver: NodeDriver<ReduceTaskState> | undefined;
  private started = false;
  private ended = false;
  /** The last chunk handed to the consumer, and the last one reported consumed to the task. */
  private taken = -1;
  private reported = -1;
  private deadline = Infinity;
  private records = 0;
  /** While the task waits for another task's file-group ask: what opens (or fails) that wait. */
  private gate: { open(): void; fail(reason: Error): void; readonly opened: Promise<void> } | undefined;
  private leftFileGroup = false;
  /** With `reuseChunkMemory`: the receive bodies of the chunks this read holds, by their memory. */
  private lending: Map<ArrayBufferLike, Uint8Array> | undefined;

  constructor(
    private readonly context: ReaderContext,
    private readonly shuffleId: number,
    private readonly partitionId: number,
    private readonly options: ReadOptions = {},
  ) {}

  get recordsRead(): number {
    return this.records;
  }

  async *chunks(options: ChunkOptions = {}): AsyncGenerator<Iterable<Uint8Array>, void, undefined> {
    const lends = options.reuseChunkMemory === true && !this.started;
    const lendingRead = lends ? this.context.chunkBodies?.begin() : undefined;
    if (lendingRead !== undefined) this.lending = new Map();
    try {
      for await (const chunk of this.readyChunks()) yield chunkRecords([chunk]);
    } finally {
      lendingRead?.end();
    }
  }

  /** The chunks as the reduce task hands them out (their batches), each consumed when the next is asked for. */
  async *readyChunks(): AsyncGenerator<ReadyChunk, void, undefined> {
    if (this.started) throw new SvcClientError(`partition ${this.partitionId} is read once per reader`);
    this.start();
    try {
      for (;;) {
        const chunk = await this.nextChunk();
        if (chunk === undefined) return;
        this.records += chunk.records;
        yield chunk;
      }
    } finally {
      this.stop();
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    const chunks = this.chunks();
    let current: Iterator<Uint8Array> | undefined;
    return {
      next: async (): Promise<IteratorResult<Uint8Array>> => {
        for (;;) {
          if (current !== undefined) {
            const record = current.next();
            if (record.done !== true) return record;
            current = undefined;
          }
          const chunk = await chunks.next();
          if (chunk.done === true) return { done: true, value: undefined };
          current = chunk.value[Symbol.iterator]();
        }
      },
      return: async (): Promise<IteratorResult<Uint8Array>> => {
        await chunks.return(undefined);
        return { done: true, value: undefined };
      },
    };
  }

  private start(): void {
    const context = this.context;
    if (context.closed) throw new ClientClosedError('the shuffle client is closed');
    if (this.options.signal?.aborted === true) {
      throw new ReadAbortedError(
        `reading partition ${this.partitionId} of shuffle ${this.shuffleId} was aborted before it started`,
        { cause: this.options.signal.reason },
      );
    }
    const id = reduceTaskNodeId(context.appId, this.shuffleId, this.partitionId);
    if (context.network.host.has(id)) {
      throw new SvcClientError(
        `partition ${this.partitionId} of shuffle ${this.shuffleId} is already being read here`,
      );
    }
    this.started = true;
    if (this.options.timeoutMs !== undefined) this.deadline = performance.now() + this.options.timeoutMs;
    const claim = context.fileGroups.claim(context.appId, this.shuffleId, id);
    // The task is known to the host at once, so that closing the executor stops a waiting read too.
    context.network.host.add({
      id,
      stop: (reason) => {
        if (this.driver === undefined)
          this.gate?.fail(reason ?? new ClientClosedError('the shuffle client is closed'));
        else this.driver.stop(reason);
      },
      input: (input: Input) => {
        if (input.kind === 'receive') this.holdChunkBody(input.envelope.message);
        if (input.kind === 'receive' && input.envelope.message.type === 'GetReducerFileGroupResponse') {
          startReleased(
            context.fileGroups,
            context.fileGroups.answered(context.appId, this.shuffleId, input.envelope.message),
          );
        }
        this.driver?.input(input);
      },
    });
    if (claim.kind !== 'wait') {
      this.begin(claim.kind === 'cached' ? claim.answer : undefined);
      return;
    }
    let open!: () => void;
    let fail!: (reason: Error) => void;
    const opened = new Promise<void>((resolve, reject) => {
      open = resolve;
      fail = reject;
    });
    opened.catch(() => undefined); // a read given up before its first chunk never awaits it
    this.gate = { open, fail, opened };
    let waiting = waitingReads.get(context.fileGroups);
    if (waiting === undefined)
      waitingReads.set(context.fileGroups, (waiting = new Map<string, () => void>()));
    waiting.set(id, () => {
      this.begin(context.fileGroups.lookup(context.appId, this.shuffleId));
      this.gate?.open();
    });
  }

  /** Runs the reduce task, with the executor's file group when it holds one (otherwise the task asks). */
  private begin(cached: FileGroupAnswer | undefined): void {
    const context = this.context;
    const id = reduceTaskNodeId(context.appId, this.shuffleId, this.partitionId);
    const config = reduceTaskConfigFrom(
      context.client.conf,
      { shuffleId: this.shuffleId, partitionId: this.partitionId },
      context.appId,
    );
    const driver = new NodeDriver<ReduceTaskState>(
      id,
      reduceTaskMachine,
      initialReduceTaskState(cached === undefined ? config : { ...config, cachedFileGroup: cached }),
      context.client.release,
      { send: (envelope) => context.network.transport.send(envelope), logger: context.client.logger },
    );
    this.driver = driver;
    // Once the task no longer wants the file group without having it, the next waiting task asks.
    const unwatch = driver.watch(() => {
      if (!driver.isStopped && wantsFileGroup(driver.state)) return;
      unwatch();
      this.leaveFileGroup();
    });
    driver.start(new Map());
  }

  /** This read no longer asks for nor waits for the file group: the executor's cache hands its ask on. */
  private leaveFileGroup(): void {
    if (this.leftFileGroup) return;
    this.leftFileGroup = true;
    const cache = this.context.fileGroups;
    const id = reduceTaskNodeId(this.context.appId, this.shuffleId, this.partitionId);
    waitingReads.get(cache)?.delete(id);
    startReleased(cache, cache.left(this.context.appId, this.shuffleId, id));
  }

  private stop(): void {
    if (this.ended) return;
    this.ended = true;
    const driver = this.driver;
    // A read given up early (the consumer stopped iterating, aborted, or timed out) closes its open stream, so that
    // the worker does not keep it until the shuffle ends: the task says what to send (closeOnAbandon).
    const close = driver === undefined || driver.isStopped ? undefined : closeOnAbandon(driver.state);
    if (close !== undefined) {
      this.context.network.transport.send({ from: driver!.id, to: close.to, message: close.message });
      this.context.client.logger.debug(
        { event: 'reader.streamClosed', partition: this.partitionId, worker: close.to },
        `reading partition ${this.partitionId} was given up early: its stream on ${close.to} is closed`,
      );
    }
    driver?.stop();
    this.giveBackChunkBodies(undefined);
    this.gate?.fail(new ClientClosedError('the read was given up'));
    this.leaveFileGroup();
    this.context.network.host.remove(reduceTaskNodeId(this.context.appId, this.shuffleId, this.partitionId));
  }

  /** The next chunk once the task hands it out; undefined at the end; throws the read's failure. */
  private async nextChunk(): Promise<ReadyChunk | undefined> {
    if (this.driver === undefined) await this.untilStarted();
    const driver = this.driver!;
    // Asking for the next chunk is the consumer's word that it is done with the one it had.
    if (this.taken > this.reported) {
      this.reported = this.taken;
      driver.input({ kind: 'consumed', chunk: this.taken });
      this.giveBackChunkBodies(driver.state);
    }
    const waited = await this.wait((state) => {
      const chunk = state.ready.find((c) => c.seq > this.taken);
      if (chunk !== undefined) return { chunk };
      if (state.phase === 'done') return { end: true };
      if (state.phase === 'failed') return { failed: state };
      return undefined;
    });
    if ('chunk' in waited) {
      this.taken = waited.chunk.seq;
      return waited.chunk;
    }
    if ('end' in waited) return undefined;
    throw this.failure(waited.failed);
  }

  /**
   * With `reuseChunkMemory`, a chunk that arrived in a body of the executor's pool is held by this read from before
   * the task sees it (the connection still holds it then) until it is consumed or dropped (giveBackChunkBodies).
   */
  private holdChunkBody(message: Message): void {
    const lending = this.lending;
    const bodies = this.context.chunkBodies?.pool;
    if (lending === undefined || bodies === undefined || this.ended) return;
    const bytes =
      message.type === 'ChunkData'
        ? message.bytes
        : message.type === 'OpenStreamResponse'
          ? message.firstChunk
          : undefined;
    if (bytes === undefined || lending.has(bytes.buffer) || !bodies.claim(bytes)) return;
    bodies.hold(bytes);
    lending.set(bytes.buffer, bytes);
  }

  /**
   * Gives back to the executor's pool every chunk body this read holds that the task no longer refers to (the
   * consumer has asked for the chunk after it, or never saw it: a duplicate, a late answer, a copy given up); with
   * no state (the read ended), every one.
   */
  private giveBackChunkBodies(state: ReduceTaskState | undefined): void {
    const lending = this.lending;
    const bodies = this.context.chunkBodies?.pool;
    if (lending === undefined || bodies === undefined || lending.size === 0) return;
    const kept = state === undefined ? undefined : referencedMemory(state);
    for (const [memory, body] of lending) {
      if (kept?.has(memory) === true) continue;
      lending.delete(memory);
      bodies.release(body);
    }
  }

  /** Waits until the executor's cache starts the task (FileGroupCache.claim), bounded as `wait` is. */
  private untilStarted(): Promise<void> {
    const gate = this.gate!;
    return this.bounded<void>((resolve, reject) => {
      gate.opened.then(resolve, (reason: unknown) =>
        reject(reason instanceof Error ? reason : new ClientClosedError(String(reason))),
      );
      return () => undefined;
    });
  }

  /** Waits for `check` after the task's steps, bounded by the deadline and the abort signal. */
  private wait(check: (state: ReduceTaskState) => Waited | undefined): Promise<Waited> {
    const driver = this.driver!;
    const now = check(driver.state);
    if (now !== undefined) return Promise.resolve(now);
    return this.bounded<Waited>((resolve, reject) =>
      driver.watch(() => {
        if (driver.isStopped) {
          reject(
            this.context.closed
              ? new ClientClosedError(
                  `the executor was closed while partition ${this.partitionId} of shuffle ${this.shuffleId} was read`,
                )
              : this.failure(undefined),
          );
          return;
        }
        const result = check(driver.state);
        if (result !== undefined) resolve(result);
      }),
    );
  }

  /**
   * A wait bounded by the read's deadline and abort signal: `arm` starts it and returns what undoes it; whichever
   * settles first (the wait, the deadline, the abort) undoes the others, once.
   */
  private bounded<T>(
    arm: (resolve: (value: T) => void, reject: (error: Error) => void) => () => void,
  ): Promise<T> {
    const signal = this.options.signal;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      // `arm` may settle before it returns: what undoes it is then run as soon as it is known.
      const armed: { disarm?: () => void } = {};
      const settle = (finish: () => void) => {
        if (settled) return;
        settled = true;
        armed.disarm?.();
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        finish();
      };
      const onAbort = () =>
        settle(() =>
          reject(
            new ReadAbortedError(
              `reading partition ${this.partitionId} of shuffle ${this.shuffleId} was aborted while it waited for ${this.waitingFor()}`,
              { cause: signal?.reason },
            ),
          ),
        );
      armed.disarm = arm(
        (value) => settle(() => resolve(value)),
        (error) => settle(() => reject(error)),
      );
      if (settled) {
        armed.disarm();
        return;
      }
      if (signal !== undefined) {
        if (signal.aborted) {
          onAbort();
          return;
        }
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (this.deadline !== Infinity) {
        timer = setTimeout(
          () =>
            settle(() =>
              reject(
                new ReadTimeoutError(
                  `reading partition ${this.partitionId} of shuffle ${this.shuffleId} did not finish within ` +
                    `${this.options.timeoutMs} ms; it was waiting for ${this.waitingFor()}`,
                ),
              ),
            ),
          Math.max(0, this.deadline - performance.now()),
        );
      }
    });
  }

  /** What the read waits for, in words (for the deadline's and the abort's messages). */
  private waitingFor(): string {
    if (this.driver === undefined) return 'the GetReducerFileGroup another read of this executor asked';
    const state = this.driver.state;
    switch (state.phase) {
      case 'file-group':
        return state.waitingFor === undefined
          ? "the lifecycle manager's answer to GetReducerFileGroup"
          : `the map stage to end (the lifecycle manager says: ${state.waitingFor})`;
      case 'fetching': {
        const cursor = state.cursor;
        const copy =
          cursor === undefined ? undefined : state.plan?.epochs[cursor.epochIndex]?.copies[cursor.copyIndex];
        if (copy === undefined || cursor === undefined) return 'the next chunk';
        return (
          `${cursor.streamId === undefined ? 'the stream' : `chunk ${cursor.nextAdmit}`} of the ${copy.location.mode} ` +
          `copy of epoch ${copy.location.epoch} on ${workerKey(copy.location.worker)}`
        );
      }
      case 'draining':
      case 'done':
      case 'failed':
        return 'the end of the read';
    }
  }

  private failure(state: ReduceTaskState | undefined): SvcClientError {
    const context = this.context;
    const refusal = context.refusal();
    if (refusal !== undefined) return new ClientReleaseRefusedError(refusal);
    const authRefusal = context.authRefusal();
    if (authRefusal !== undefined) return new AuthenticationFailedError(authRefusal);
    const error = state?.error;
    return new ReduceTaskFailedError(
      error?.kind ?? 'failure',
      `reading partition ${this.partitionId} of shuffle ${this.shuffleId} failed (${error?.kind ?? 'stopped'}): ` +
        `${error?.message ?? 'the client was closed'}${advice(error?.kind, this.shuffleId)}`,
    );
  }
}

/** The memory of the chunks a reduce task still holds: handed out and not consumed, or arrived early. */
function referencedMemory(state: ReduceTaskState): Set<ArrayBufferLike> {
  const memory = new Set<ArrayBufferLike>();
  for (const chunk of state.ready) for (const batch of chunk.batches) memory.add(batch.buffer);
  for (const frames of state.cursor?.arrived.values() ?? [])
    for (const frame of frames) memory.add(frame.payload.buffer);
  return memory;
}

/** A partition's records as a `stream.Readable` in object mode: one record per chunk of the stream. */
export function readableOf(reader: PartitionReader, highWaterMark = 1024): Readable {
  return Readable.from(reader, { objectMode: true, highWaterMark });
}

function advice(kind: string | undefined, clusterId: number): string {
  switch (kind) {
    case 'fetch-failure':
      return `${rerunAdvice(clusterId)}.`;
    case 'unreadable':
      return (
        '. The data is lost and stage rerun is off (svc.client.spark.stageRerun.enabled=false, the default before ' +
        `0.6.0): the read cannot succeed. To recover${rerunAdvice(clusterId).slice(1)}.`
      );
    case 'integrity':
      return '. The data read does not match what the maps wrote: please report this as a bug.';
    case undefined:
    default:
      return '. Retry the task.';
  }
}
