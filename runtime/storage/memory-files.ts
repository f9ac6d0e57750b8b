import { IoFailure } from './io-error.ts';
import type { TierFiles } from './tier-files.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';

interface MemoryFile {
  /** The appended buffers themselves, in order: the caller handed them over, so nothing is copied on write. */
  readonly chunks: Uint8Array[];
  /** `ends[i]` is the file offset just past `chunks[i]` (for finding a read's first chunk by binary search). */
  readonly ends: number[];
  length: number;
}

/**
 * The memory tier: files as lists of the chunks written to them. Nothing here is durable; a flush only checks that
 * the file exists. The work is synchronous; results are promises only to share TierFiles with the disk tiers.
 */
export class MemoryFiles implements TierFiles {
  private readonly files = new Map<string, MemoryFile>();
  private held = 0;

  /** Bytes held by all memory files. */
  get bytes(): number {
    return this.held;
  }

  create(id: string): Promise<void> {
    return settled(() => this.createNow(id));
  }

  append(id: string, chunks: readonly Uint8Array[]): Promise<void> {
    return settled(() => this.appendNow(id, chunks));
  }

  flush(id: string): Promise<void> {
    return settled(() => void this.require(id));
  }

  /**
   * A copy of [offset, offset + length), short at the end of the file. A copy, not a view of a stored chunk: the
   * reader may keep or change its bytes while the file lives on.
   */
  read(id: string, offset: number, length: number): Promise<Uint8Array> {
    return settled(() => this.readNow(id, offset, length));
  }

  /** The stored chunks themselves: a move hands them to the target tier without copying. */
  contents(id: string): Promise<readonly Uint8Array[]> {
    return settled(() => [...this.require(id).chunks]);
  }

  /** A move into memory: the source lets go of the chunks, so they are kept as they are. */
  adopt(id: string, _segments: readonly string[], chunks: readonly Uint8Array[]): Promise<void> {
    return settled(() => {
      this.createNow(id);
      this.appendNow(id, chunks);
    });
  }

  remove(id: string): Promise<void> {
    const file = this.files.get(id);
    if (file !== undefined) {
      this.files.delete(id);
      this.held -= file.length;
    }
    return Promise.resolve();
  }

  private createNow(id: string): void {
    if (this.files.has(id)) throw new IoFailure('EXISTS', `memory file ${id} exists`);
    this.files.set(id, { chunks: [], ends: [], length: 0 });
  }

  private appendNow(id: string, chunks: readonly Uint8Array[]): void {
    const file = this.require(id);
    for (const chunk of chunks) {
      if (chunk.length === 0) continue;
      file.length += chunk.length;
      file.chunks.push(chunk);
      file.ends.push(file.length);
      this.held += chunk.length;
    }
  }

  private readNow(id: string, offset: number, length: number): Uint8Array {
    const file = this.require(id);
    const start = Math.min(offset, file.length);
    const out = unzeroedBytes(Math.max(0, Math.min(length, file.length - start)));
    let index = firstChunkEndingAfter(file.ends, start);
    let copied = 0;
    while (copied < out.length) {
      const chunk = file.chunks[index]!;
      const from = start + copied - (file.ends[index]! - chunk.length);
      const n = Math.min(chunk.length - from, out.length - copied);
      out.set(chunk.subarray(from, from + n), copied);
      copied += n;
      index += 1;
    }
    return out;
  }

  private require(id: string): MemoryFile {
    const file = this.files.get(id);
    if (file === undefined) throw new IoFailure('NOT_FOUND', `memory file ${id} does not exist`);
    return file;
  }
}

/** The index of the first chunk whose end lies past `offset` (chunks.length when none does). */
function firstChunkEndingAfter(ends: readonly number[], offset: number): number {
  let low = 0;
  let high = ends.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (ends[middle]! <= offset) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The outcome of synchronous work as a promise (a throw becomes a rejection). */
function settled<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
