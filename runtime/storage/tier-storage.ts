import path from 'node:path';
import type { ReadBuffers } from './read-buffers.ts';
import {
  chunksOfWrite,
  type BatchableIo,
  type FileRef,
  type IoCompletion,
} from '../../core/machines/effects.ts';
import { isDfsType } from '../../core/domain/storage.ts';
import { DirectoryFiles } from './directory-files.ts';
import { DirectoryHealth } from './directory-health.ts';
import { fileIdSegments, isPlainFileId } from './file-id.ts';
import { FileLanes } from './file-lanes.ts';
import { IoFailure, ioErrorOf } from './io-error.ts';
import { MemoryFiles } from './memory-files.ts';
import type { MemoryPool } from './memory-pool.ts';
import { OpenHandles } from './open-handles.ts';
import type { TierFiles } from './tier-files.ts';

const DEFAULT_MAX_OPEN_FILES = 4096;

export interface TierStorageOptions {
  /** The local disks: the mount point as the core names the disk, and its directory on this machine. */
  readonly disks: readonly { readonly mountPoint: string; readonly dir: string }[];
  /** Directory of the distributed tier (HDFS, OSS and S3 files), e.g. an NFS, CephFS or HDFS-fuse mount. */
  readonly dfsDir?: string;
  /** A disk's directory was removed or replaced (for the driver's log); called once per failure. */
  readonly onDiskFailed?: (mountPoint: string, reason: string) => void;
  /** Every completed operation with its time from issue to completion (the worker's metrics). */
  readonly onIoDone?: (op: BatchableIo, completion: IoCompletion, elapsedMs: number) => void;
  /** Buffers that chunks read from disk and DFS files are served in, given back by the transport once written. */
  readonly readBuffers?: ReadBuffers;
  /** Memory the memory tier copies appended bytes into (memory-pool.ts); without it, it keeps the buffers written. */
  readonly memoryPool?: MemoryPool;
  /** The pool first could not lend a block (fragmentation): called once, for the worker's warning. */
  readonly onMemoryOverflow?: (blockBytes: number) => void;
  /**
   * A delete that left its file behind (permissions, an I/O error, an id that names no file of a tier): the core's
   * delete completes silently, so this is the only trace (the worker's warning and DeleteFileFailCount).
   */
  readonly onDeleteFailed?: (file: string, reason: string) => void;
  /**
   * Handles open at once across the disks and the DFS directory (svc.worker.storage.maxOpenFiles); past it the least
   * recently used idle one is closed and opened again when next needed. Default 4096.
   */
  readonly maxOpenFiles?: number;
}

/** Where one FileRef lives: its tier's files, its id, and the key its operations are ordered by. */
interface Place {
  readonly files: TierFiles;
  readonly id: string;
  readonly segments: readonly string[];
  readonly key: string;
}

/**
 * Executes the core's file effects (core/machines/effects.ts) on real tiers: memory, local disks and a DFS
 * directory, with the simulator's semantics (sim/world/storage.ts). Operations on one file run in issue order,
 * operations on different files concurrently (file-lanes.ts), so `runBatch` is "each as if issued alone, in order",
 * and so are calls of `run` and `delete` made one after another. Nothing here rejects: a failure is the completion
 * `ioFailed` with the core's IoError.
 */
export class TierStorage {
  private readonly lanes = new FileLanes();
  private readonly places = new WeakMap<FileRef, Place>();
  private readonly memory: MemoryFiles;
  private readonly disks = new Map<string, DirectoryFiles>();
  private readonly dfs: DirectoryFiles | undefined;
  private closed = false;
  private readonly onIoDone: TierStorageOptions['onIoDone'];
  private readonly onDeleteFailed: TierStorageOptions['onDeleteFailed'];

  constructor(options: TierStorageOptions) {
    this.onIoDone = options.onIoDone;
    this.onDeleteFailed = options.onDeleteFailed;
    this.memory = new MemoryFiles(options.memoryPool, options.onMemoryOverflow);
    const handles = new OpenHandles(options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES);
    for (const disk of options.disks) {
      if (this.disks.has(disk.mountPoint)) throw new RangeError(`disk ${disk.mountPoint} is declared twice`);
      const inside = path.relative(disk.mountPoint, disk.dir);
      const workingDirInside = inside !== '' && !inside.startsWith('..') && !path.isAbsolute(inside);
      const health: DirectoryHealth = new DirectoryHealth(disk.dir, {
        watch: true,
        ...(workingDirInside ? { recreateUnder: disk.mountPoint } : {}),
        onFailed: (reason) => {
          files.releaseAll();
          try {
            options.onDiskFailed?.(disk.mountPoint, reason);
          } catch {
            // The callback is for logging; its failure must not stop the disk from being marked failed.
          }
        },
      });
      const files = new DirectoryFiles(disk.dir, health, options.readBuffers, handles);
      this.disks.set(disk.mountPoint, files);
    }
    if (options.dfsDir !== undefined) {
      const health: DirectoryHealth = new DirectoryHealth(options.dfsDir, {
        watch: false,
        onFailed: () => dfs.releaseAll(),
      });
      const dfs = new DirectoryFiles(options.dfsDir, health, options.readBuffers, handles);
      this.dfs = dfs;
    }
    // Started once every tier exists: a directory missing now fails its disk, and its callback may run at once.
    for (const files of this.directoryTiers()) files.health.start();
  }

  /** Runs one operation; resolves with its completion (never rejects). */
  run(op: BatchableIo): Promise<IoCompletion> {
    const observe = this.onIoDone;
    const issued = observe === undefined ? 0 : performance.now();
    let started: Promise<Uint8Array | undefined>;
    try {
      started = this.start(op);
    } catch (error) {
      return Promise.resolve(failed(op.op, error));
    }
    const completed = started.then(
      (bytes): IoCompletion =>
        bytes === undefined ? { kind: 'ioDone', op: op.op } : { kind: 'ioDone', op: op.op, bytes },
      (error: unknown) => failed(op.op, error),
    );
    if (observe === undefined) return completed;
    return completed.then((completion) => {
      observe(op, completion, performance.now() - issued);
      return completion;
    });
  }

  /** Runs the operations as if each were issued alone, in order; resolves once all completed, in the batch's order. */
  runBatch(ops: readonly BatchableIo[]): Promise<IoCompletion[]> {
    const completions: (IoCompletion | Promise<IoCompletion>)[] = [];
    let waits = false;
    const observe = this.onIoDone;
    // One clock read per operation done at once: each one's time runs from the end of the one before it.
    let since = observe === undefined ? 0 : performance.now();
    for (const op of ops) {
      const done = this.runNow(op);
      if (done !== undefined) {
        completions.push(done);
        if (observe !== undefined) {
          const now = performance.now();
          observe(op, done, now - since);
          since = now;
        }
      } else {
        completions.push(this.run(op));
        waits = true;
        // `run` times its own operation; the next one done at once starts from here.
        if (observe !== undefined) since = performance.now();
      }
    }
    if (!waits) return Promise.resolve(completions as IoCompletion[]);
    return Promise.all(completions.map((done) => (done instanceof Promise ? done : Promise.resolve(done))));
  }

  /**
   * An operation on a memory file whose lane is empty (a write, a create or a flush), done at once with its
   * completion, or undefined for any other (and for an unsafe id, which `run` fails). `run` would do the same work
   * as synchronously (inline), but through three or four promises, and a merged push of 4 KiB batches issues one
   * write per batch, a reserve of 10,000 partitions 10,000 creates and their commit 10,000 flushes
   * (docs/performance.md). Nor does it resolve a `Place` (a cached one costs a weak map's lookup, a new one its
   * insertion and the id's segments): a memory file is its id in one map, and its lane needs looking up only while
   * some lane is busy.
   */
  private runNow(op: BatchableIo): IoCompletion | undefined {
    const { kind } = op;
    if (this.closed || (kind !== 'write' && kind !== 'createFile' && kind !== 'flush')) return undefined;
    if (!this.memoryInline(op.file)) return undefined;
    const id = op.file.id;
    try {
      if (kind === 'write') this.memory.appendNow(id, op.more === undefined ? [op.bytes] : chunksOfWrite(op));
      else if (kind === 'createFile') this.memory.createNow(id);
      else this.memory.flushNow(id);
      return { kind: 'ioDone', op: op.op };
    } catch (error) {
      return failed(op.op, error);
    }
  }

  /**
   * Closes and removes the file, after the operations issued on it before; a missing file is fine. Never rejects: a
   * file left behind is reported to `onDeleteFailed`.
   */
  delete(file: FileRef): Promise<void> {
    if (this.closed) return Promise.resolve();
    // The memory tier's remove never fails (a missing file is fine): an unregistered shuffle deletes every file.
    if (this.memoryInline(file)) return this.memory.remove(file.id);
    let place: Place;
    try {
      place = this.placeOf(file);
    } catch (error) {
      // A tier this worker does not have holds nothing to delete; an unsafe id names no file it may touch.
      if (!(error instanceof IoFailure && error.code === 'NOT_FOUND')) this.deleteFailed(file, error);
      return Promise.resolve();
    }
    return this.alone(place, () => place.files.remove(place.id, place.segments)).catch((error: unknown) =>
      this.deleteFailed(file, error),
    );
  }

  private deleteFailed(file: FileRef, error: unknown): void {
    const where = file.mountPoint === '' ? file.tier : `${file.tier} ${file.mountPoint}`;
    try {
      this.onDeleteFailed?.(`${file.id} (${where})`, error instanceof Error ? error.message : String(error));
    } catch {
      // The callback is for logging and counting; its failure must not make a delete reject.
    }
  }

  /** Bytes held by memory-tier files. */
  memoryBytes(): number {
    return this.memory.bytes;
  }

  /** Lets the operations already issued end, then closes every file handle; later operations fail. */
  async close(): Promise<void> {
    this.closed = true;
    await this.lanes.idle();
    for (const files of this.directoryTiers()) files.health.close();
    await Promise.all(this.directoryTiers().map((files) => files.closeAll()));
  }

  /** Queues the operation on its file(s) synchronously (that is what keeps issue order), returning its outcome. */
  private start(op: BatchableIo): Promise<Uint8Array | undefined> {
    if (this.closed) throw new IoFailure('IO_ERROR', 'the storage is closed');
    const place = this.placeOf(op.file);
    const { files, id, segments, key } = place;
    switch (op.kind) {
      case 'createFile':
        return this.alone(place, () => files.create(id, segments)).then(nothing);
      case 'write': {
        const chunks = chunksOfWrite(op);
        const append = (all: readonly Uint8Array[]) => files.append(id, all);
        return (this.inline(place) ? append(chunks) : this.lanes.append(key, chunks, append)).then(nothing);
      }
      case 'flush':
        return this.alone(place, () => files.flush(id)).then(nothing);
      case 'read': {
        const { offset, length } = op;
        if (!isCount(offset) || !isCount(length))
          throw new IoFailure('IO_ERROR', `cannot read ${length} bytes at ${offset}`);
        // The core reads only to serve a chunk (core/machines/effects.ts): the bytes may live in a lent buffer.
        const read = () => files.read(id, offset, length, true);
        return this.inline(place) ? read() : this.lanes.read(key, read);
      }
      case 'moveFile': {
        const target = this.placeOf(op.to);
        return this.lanes.exclusive([key, target.key], () => move(place, target)).then(nothing);
      }
    }
  }

  /** `inline` for a memory file without its `Place`: one with a safe id whose lane is empty. */
  private memoryInline(file: FileRef): boolean {
    return file.tier === 'MEMORY' && isPlainFileId(file.id) && this.memoryLaneIdle(file.id);
  }

  /** Whether nothing is queued on the memory file `id`: most of the time no lane is busy, and no key is built. */
  private memoryLaneIdle(id: string): boolean {
    return !this.lanes.anyBusy() || !this.lanes.busy(laneKey(MEMORY_TIER, id));
  }

  /** Runs `work` alone on the file: after everything issued on it before, and before anything issued after. */
  private alone<T>(place: Place, work: () => Promise<T>): Promise<T> {
    return this.inline(place) ? work() : this.lanes.exclusive([place.key], work);
  }

  /**
   * Whether an operation on this file may skip its lane: a memory file whose lane is empty. The memory tier does
   * its work synchronously when called (memory-files.ts), so the operation is over before anything can be issued
   * after it, which is all the lane would ensure. A lane costs several promises per operation, and a push issues
   * one write per batch and a 10,000-partition shuffle 30,000 creates, flushes and deletes. A busy lane (a move off
   * the memory tier under way) still orders what comes after it.
   */
  private inline(place: Place): boolean {
    return place.files === this.memory && this.memoryLaneIdle(place.id);
  }

  /**
   * Resolves a FileRef; an unknown disk, or a DFS file without a DFS directory, is NOT_FOUND (as in the simulator).
   * Kept per FileRef (immutable, and one object for all of a file's operations; the tiers are fixed at
   * construction): each write, flush and create checked and split its id and built its key again, 40,000 times
   * for a shuffle of 10,000 partitions.
   */
  private placeOf(file: FileRef): Place {
    let place = this.places.get(file);
    if (place === undefined) {
      place = this.resolve(file);
      this.places.set(file, place);
    }
    return place;
  }

  private resolve(file: FileRef): Place {
    const segments = fileIdSegments(file.id);
    let files: TierFiles | undefined;
    let tier: string;
    if (file.tier === 'MEMORY') {
      files = this.memory;
      tier = MEMORY_TIER;
    } else if (isDfsType(file.tier)) {
      // HDFS, OSS and S3 files share the one DFS directory, as they share one device in the simulator.
      files = this.dfs;
      tier = 'dfs';
    } else {
      files = this.disks.get(file.mountPoint);
      tier = `disk:${file.mountPoint}`;
    }
    if (files === undefined) {
      const where = file.mountPoint === '' ? file.tier : `${file.tier} disk ${file.mountPoint}`;
      throw new IoFailure('NOT_FOUND', `no ${where} storage on this worker`);
    }
    return { files, id: file.id, segments, key: laneKey(tier, file.id) };
  }

  private directoryTiers(): DirectoryFiles[] {
    return this.dfs === undefined ? [...this.disks.values()] : [...this.disks.values(), this.dfs];
  }
}

const MEMORY_TIER = 'memory';

/** The key a file's operations are ordered by; NUL appears in no checked id, so it names exactly one file. */
function laneKey(tier: string, id: string): string {
  return `${tier}\0${id}`;
}

/**
 * Eviction: copy to the target, make the copy durable, then drop the source. A missing source is NOT_FOUND, an
 * existing target EXISTS; a failure on the target leaves the source untouched, so the worker can retry elsewhere.
 */
async function move(source: Place, target: Place): Promise<void> {
  const chunks = await source.files.contents(source.id);
  await target.files.adopt(target.id, target.segments, chunks);
  await source.files.remove(source.id, source.segments);
}

function failed(op: number, error: unknown): IoCompletion {
  return { kind: 'ioFailed', op, error: ioErrorOf(error) };
}

function nothing(): undefined {
  return undefined;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}
