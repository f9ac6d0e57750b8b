import { Volume } from 'memfs';
import type { IoError } from '../../core/machines/effects.ts';

interface FileEntry {
  length: number;
  /** Bytes made durable by the last completed sync; a crash truncates the file to this length. */
  synced: number;
  /** Where the file's first `inLogBytes` bytes lie in the volume's log, in file order. */
  extents: Extent[];
  inLogBytes: number;
  /** Appended bytes not yet handed to memfs, oldest first; they start at offset `inLogBytes`. */
  pending: Uint8Array[];
  pendingBytes: number;
}

/** A run of a file's bytes in the volume's log: `length` bytes from offset `at`. */
interface Extent {
  readonly at: number;
  length: number;
}

/** The memfs file that holds a volume's bytes, open for the volume's whole life, and where it ends. */
interface Log {
  readonly volume: Volume;
  readonly fd: number;
  end: number;
}

export type ReadResult = Uint8Array | IoError;

const MIN_SLAB_BYTES = 4 * 1024;
const MAX_SLAB_BYTES = 64 * 1024;
const LOG_PATH = '/log';

/**
 * The process memfs's volume checks paths and permissions against: a fixed identity and working directory, so that
 * nothing of the real machine leaks into a run.
 */
const SIMULATED_PROCESS = {
  cwd: () => '/',
  platform: 'linux' as const,
  env: {},
  emitWarning: () => {},
  getuid: () => 0,
  getgid: () => 0,
};

/**
 * One simulated device: a memfs volume holding the bytes, plus the bookkeeping a real disk hides (durable length per
 * file, bytes used against a capacity). The memfs volume is created on first use because most disks of a short run
 * never see a file, and creating a volume costs more than a thousand appends.
 *
 * The volume keeps every file's bytes in one memfs file, its log, the way a log-structured store lays out its
 * files: each file is a list of extents of the log. Appends wait in a per-file list until the file is read, the way
 * an operating system's page cache holds writes until writeback; only then do they reach the log, in one write at
 * its end. A sync only moves the file's durable mark (the bytes up to it survive a crash, pending or not); a crash
 * drops everything past the mark. Most shuffle files are appended to many times, synced once and read once or never
 * (a replica is read only when its primary fails), so memfs sees one write and one read per file that is read, and
 * nothing of a file nobody reads.
 *
 * Why one memfs file and not one per file (until 24 November 2026): opening a memfs file walks its path and checks
 * permissions, and memfs's file nodes ask the operating system for the user and group ids four times per file
 * (getuid and getgid are real system calls, which memfs takes from the global process, not from the identity it is
 * given): ≈ 12 µs per file read, ≈ 9 % of a standard seed, of which the system calls alone were ≈ 6 %. The log is
 * opened once per volume, and reads and writes go through its descriptor. A removed file's extents stay in the log
 * as garbage (the capacity accounting frees them at once; a run is too short for the garbage to matter).
 */
export class SimVolume {
  private log: Log | undefined;
  private readonly files = new Map<string, FileEntry>();
  private usedBytes = 0;
  /** Where appended bytes and reads are placed (see allocate). */
  private slab = new Uint8Array(0);
  private slabUsed = 0;

  constructor(
    /** Capacity in bytes; Infinity for tiers whose limits the worker enforces itself (memory, DFS). */
    readonly capacityBytes: number,
    /** A volatile volume (memory) loses every file on a crash instead of keeping the synced prefix. */
    readonly volatile: boolean,
  ) {}

  get used(): number {
    return this.usedBytes;
  }

  has(path: string): boolean {
    return this.files.has(path);
  }

  /** Every file's path, in creation order (a restarted worker lists its disks). */
  paths(): IterableIterator<string> {
    return this.files.keys();
  }

  length(path: string): number | undefined {
    return this.files.get(path)?.length;
  }

  create(path: string): IoError | undefined {
    if (this.files.has(path)) return 'EXISTS';
    this.files.set(path, { length: 0, synced: 0, extents: [], inLogBytes: 0, pending: [], pendingBytes: 0 });
    return undefined;
  }

  /** Appends all of `bytes` or nothing: a short write would be a different fault than the one injected. */
  /** Appends every chunk, in order, or none of them (one write of several batches fails as a whole). */
  appendAll(path: string, chunks: readonly Uint8Array[]): IoError | undefined {
    const entry = this.files.get(path);
    if (!entry) return 'NOT_FOUND';
    let length = 0;
    for (const chunk of chunks) length += chunk.length;
    if (this.usedBytes + length > this.capacityBytes) return 'NO_SPACE';
    for (const chunk of chunks) this.append(path, chunk);
    return undefined;
  }

  append(path: string, bytes: Uint8Array): IoError | undefined {
    const entry = this.files.get(path);
    if (!entry) return 'NOT_FOUND';
    if (this.usedBytes + bytes.length > this.capacityBytes) return 'NO_SPACE';
    // The caller may reuse its buffer: keep a copy, as a write(2) does.
    entry.pending.push(this.copyOf(bytes));
    entry.pendingBytes += bytes.length;
    entry.length += bytes.length;
    this.usedBytes += bytes.length;
    return undefined;
  }

  sync(path: string): IoError | undefined {
    const entry = this.files.get(path);
    if (!entry) return 'NOT_FOUND';
    entry.synced = entry.length;
    return undefined;
  }

  /** Reads up to `length` bytes at `offset`; a range past the end returns the bytes that exist (like pread). */
  read(path: string, offset: number, length: number): ReadResult {
    const entry = this.files.get(path);
    if (!entry) return 'NOT_FOUND';
    const available = Math.max(0, Math.min(length, entry.length - offset));
    const out = this.allocate(available);
    const log = this.openLog();
    this.writeBack(log, entry);
    // Copy the range extent by extent: `skip` is how much of the file lies before the current extent.
    let skip = 0;
    let copied = 0;
    for (const extent of entry.extents) {
      if (copied === available) break;
      const from = offset + copied - skip;
      if (from < extent.length) {
        const n = Math.min(extent.length - from, available - copied);
        log.volume.readSync(log.fd, out, copied, n, extent.at + from);
        copied += n;
      }
      skip += extent.length;
    }
    return out;
  }

  remove(path: string): boolean {
    const entry = this.files.get(path);
    if (!entry) return false;
    this.usedBytes -= entry.length;
    this.files.delete(path);
    return true;
  }

  /** Cuts the file to its first `length` bytes, wherever they are (in the log or still pending). */
  private truncate(entry: FileEntry, length: number): void {
    if (length <= entry.inLogBytes) {
      entry.pending = [];
      entry.pendingBytes = 0;
      let kept = 0;
      const extents: Extent[] = [];
      for (const extent of entry.extents) {
        if (kept === length) break;
        const n = Math.min(extent.length, length - kept);
        extents.push({ at: extent.at, length: n });
        kept += n;
      }
      entry.extents = extents;
      entry.inLogBytes = length;
    } else {
      const keep = length - entry.inLogBytes;
      entry.pending = [concat(entry.pending, this.allocate(entry.pendingBytes)).subarray(0, keep)];
      entry.pendingBytes = keep;
    }
    this.usedBytes -= entry.length - length;
    entry.length = length;
  }

  private openLog(): Log {
    if (this.log === undefined) {
      const volume = Volume.fromJSON({}, '/', { process: SIMULATED_PROCESS });
      this.log = { volume, fd: volume.openSync(LOG_PATH, 'w+'), end: 0 };
    }
    return this.log;
  }

  /** A copy of `bytes` (see allocate). */
  private copyOf(bytes: Uint8Array): Uint8Array {
    const copy = this.allocate(bytes.length);
    copy.set(bytes);
    return copy;
  }

  /**
   * `length` zero bytes, as a view into the volume's current slab. V8 allocates a typed array of more than 64 bytes
   * outside its heap at ≈ 1 µs each (and collecting them costs more), against ≈ 0.1 µs for a view into an existing
   * buffer; most appends and reads are a batch or a file of a few hundred bytes, so a buffer of their own each was
   * ≈ 3 % of a seed. A slab is never reused (every view stays valid, and holds its slab while it lives); slabs grow
   * from 4 KiB to 64 KiB as the volume is used; a large request gets its own buffer.
   */
  private allocate(length: number): Uint8Array {
    if (length > MAX_SLAB_BYTES / 4) return new Uint8Array(length);
    if (this.slabUsed + length > this.slab.length) {
      // Never smaller than the request (at most a quarter of the largest slab, above).
      const size = Math.max(length, Math.min(MAX_SLAB_BYTES, Math.max(MIN_SLAB_BYTES, this.slab.length * 2)));
      this.slab = new Uint8Array(size);
      this.slabUsed = 0;
    }
    const view = this.slab.subarray(this.slabUsed, this.slabUsed + length);
    this.slabUsed += length;
    return view;
  }

  /** Hands the file's pending appends to memfs: one write at the end of the log, a new extent (or a longer last one). */
  private writeBack(log: Log, entry: FileEntry): void {
    if (entry.pendingBytes === 0) return;
    const bytes =
      entry.pending.length === 1
        ? entry.pending[0]!
        : concat(entry.pending, this.allocate(entry.pendingBytes));
    log.volume.writeSync(log.fd, bytes, 0, bytes.length, log.end);
    const last = entry.extents[entry.extents.length - 1];
    if (last !== undefined && last.at + last.length === log.end) last.length += bytes.length;
    else entry.extents.push({ at: log.end, length: bytes.length });
    log.end += bytes.length;
    entry.inLogBytes += bytes.length;
    entry.pending = [];
    entry.pendingBytes = 0;
  }

  /** What a power loss leaves: the synced prefix of every file (nothing at all of a volatile volume). */
  crash(pathPrefix = ''): void {
    for (const [path, entry] of [...this.files]) {
      if (!path.startsWith(pathPrefix)) continue;
      if (this.volatile) {
        this.remove(path);
      } else if (entry.length > entry.synced) {
        this.truncate(entry, entry.synced);
      }
    }
  }
}

/** Copies `parts` one after another into `bytes` (exactly their total length) and returns it. */
function concat(parts: readonly Uint8Array[], bytes: Uint8Array): Uint8Array {
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return bytes;
}
