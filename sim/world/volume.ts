import { Volume } from 'memfs';
import type { IoError } from '../../core/machines/effects.ts';

interface FileEntry {
  /** Whether memfs holds the file yet: it is created when the file's bytes first reach the device (see SimVolume). */
  inMemfs: boolean;
  length: number;
  /** Bytes made durable by the last completed sync; a crash truncates the file to this length. */
  synced: number;
  /** Appended bytes not yet handed to memfs, oldest first; they start at offset `length - pendingBytes`. */
  pending: Uint8Array[];
  pendingBytes: number;
}

export type ReadResult = Uint8Array | IoError;

const MIN_SLAB_BYTES = 4 * 1024;
const MAX_SLAB_BYTES = 64 * 1024;

/**
 * The process memfs's volume checks paths and permissions against: a fixed identity and working directory, so that
 * nothing of the real machine leaks into a run. (memfs's file nodes still ask the operating system for the user id
 * themselves, ≈ 3 % of a seed, and take no identity; answering that from a cache was measured slower:
 * docs/simulation.md, Performance.)
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
 * Appends wait in a per-file list until the file is read, the way an operating system's page cache holds
 * writes until writeback; only then do they reach memfs, in one write. A sync only moves the file's durable mark (the
 * bytes up to it survive a crash, pending or not); a crash drops everything past the mark. Most shuffle files are
 * appended to many times, synced once and read once or never (a replica is read only when its primary fails), so
 * memfs sees at most one open and one write per file instead of one call per append, and none for a file nobody
 * reads (memfs opens — path walk, permission checks — were ~15 % of a simulated seed when every append reached
 * memfs, and ~7 % when every sync did).
 */
export class SimVolume {
  private volume: Volume | undefined;
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

  length(path: string): number | undefined {
    return this.files.get(path)?.length;
  }

  create(path: string): IoError | undefined {
    if (this.files.has(path)) return 'EXISTS';
    this.files.set(path, { inMemfs: false, length: 0, synced: 0, pending: [], pendingBytes: 0 });
    return undefined;
  }

  /** Appends all of `bytes` or nothing: a short write would be a different fault than the one injected. */
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
    const volume = this.memfs();
    // No descriptor is kept between operations: memfs refuses more than 10,000 open files per volume (EMFILE), a
    // limit of a process, not of a disk, which a long run would otherwise reach.
    const fd = volume.openSync(memfsPath(path), entry.inMemfs ? 'r+' : 'wx+');
    entry.inMemfs = true;
    try {
      this.writeBack(volume, fd, entry);
      if (available > 0) volume.readSync(fd, out, 0, available, offset);
    } finally {
      volume.closeSync(fd);
    }
    return out;
  }

  remove(path: string): boolean {
    const entry = this.files.get(path);
    if (!entry) return false;
    if (entry.inMemfs) this.volume!.unlinkSync(memfsPath(path));
    this.usedBytes -= entry.length;
    this.files.delete(path);
    return true;
  }

  /** Cuts the file to its first `length` bytes, wherever they are (in memfs or still pending). */
  private truncate(path: string, entry: FileEntry, length: number): void {
    const memfsBytes = entry.length - entry.pendingBytes;
    if (length <= memfsBytes) {
      entry.pending = [];
      entry.pendingBytes = 0;
      if (entry.inMemfs) this.volume!.truncateSync(memfsPath(path), length);
    } else {
      const keep = length - memfsBytes;
      entry.pending = [concat(entry.pending, this.allocate(entry.pendingBytes)).subarray(0, keep)];
      entry.pendingBytes = keep;
    }
    this.usedBytes -= entry.length - length;
    entry.length = length;
  }

  private memfs(): Volume {
    return (this.volume ??= Volume.fromJSON({}, '/', { process: SIMULATED_PROCESS }));
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

  /** Hands the file's pending appends to memfs, through the file's open descriptor `fd`. */
  private writeBack(volume: Volume, fd: number, entry: FileEntry): void {
    if (entry.pendingBytes === 0) return;
    const bytes =
      entry.pending.length === 1
        ? entry.pending[0]!
        : concat(entry.pending, this.allocate(entry.pendingBytes));
    volume.writeSync(fd, bytes, 0, bytes.length, entry.length - entry.pendingBytes);
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
        this.truncate(path, entry, entry.synced);
      }
    }
  }
}

/**
 * Where memfs keeps a file: its path with every '/' after the root escaped, so that memfs needs no directories. The
 * volume's own paths stay as given (escaping them on every operation was ~1 % of a seed); only files that reach memfs
 * pay for it.
 */
function memfsPath(path: string): string {
  return '/' + path.slice(1).replaceAll('/', '%2F');
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
