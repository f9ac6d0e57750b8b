import { Volume } from 'memfs';
import type { IoError } from '../../core/machines/effects.ts';

interface FileEntry {
  readonly fd: number;
  length: number;
  /** Bytes made durable by the last completed sync; a crash truncates the file to this length. */
  synced: number;
}

export type ReadResult = Uint8Array | IoError;

/**
 * One simulated device: a memfs volume holding the bytes, plus the bookkeeping a real disk hides (durable length per
 * file, bytes used against a capacity). The memfs volume is created on first use because most disks of a short run
 * never see a file, and creating a volume costs more than a thousand appends.
 */
export class SimVolume {
  private volume: Volume | undefined;
  private readonly files = new Map<string, FileEntry>();
  private usedBytes = 0;

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
    const volume = (this.volume ??= new Volume());
    const fd = volume.openSync(path, 'wx+');
    this.files.set(path, { fd, length: 0, synced: 0 });
    return undefined;
  }

  /** Appends all of `bytes` or nothing: a short write would be a different fault than the one injected. */
  append(path: string, bytes: Uint8Array): IoError | undefined {
    const entry = this.files.get(path);
    if (!entry) return 'NOT_FOUND';
    if (this.usedBytes + bytes.length > this.capacityBytes) return 'NO_SPACE';
    this.volume!.writeSync(entry.fd, bytes, 0, bytes.length, entry.length);
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
    const out = new Uint8Array(available);
    if (available > 0) this.volume!.readSync(entry.fd, out, 0, available, offset);
    return out;
  }

  remove(path: string): boolean {
    const entry = this.files.get(path);
    if (!entry) return false;
    this.volume!.closeSync(entry.fd);
    this.volume!.unlinkSync(path);
    this.usedBytes -= entry.length;
    this.files.delete(path);
    return true;
  }

  /** What a power loss leaves: the synced prefix of every file (nothing at all of a volatile volume). */
  crash(pathPrefix = ''): void {
    for (const [path, entry] of [...this.files]) {
      if (!path.startsWith(pathPrefix)) continue;
      if (this.volatile) {
        this.remove(path);
      } else if (entry.length > entry.synced) {
        this.volume!.ftruncateSync(entry.fd, entry.synced);
        this.usedBytes -= entry.length - entry.synced;
        entry.length = entry.synced;
      }
    }
  }
}
