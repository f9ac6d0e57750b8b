import { IoFailure } from './io-error.ts';
import { MAX_BLOCK, blockSizeFor } from './memory-pool.ts';
import type { MemoryPool, PoolBlock } from './memory-pool.ts';
import type { TierFiles } from './tier-files.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';

/**
 * A file's pieces are the first `count` entries of three lists made with room for two at its create, and grown
 * past that by a push: most memory files have one or two blocks, and lists grown from empty by a push had room for
 * seventeen each, which at 10,000 partitions made them the largest site of a worker's promoted bytes (docs/
 * performance.md). Lists made at their exact size did worse: a file's first list was promoted before its second
 * block replaced it.
 */
interface MemoryFile {
  /**
   * Where the file's bytes are, in order. Without a pool: the appended buffers themselves (the caller handed them
   * over, so nothing is copied on write). With a pool: the file's blocks, all full but the last.
   */
  readonly pieces: Uint8Array[];
  /** `ends[i]` is the file offset just past the bytes in `pieces[i]` (for finding a read's first piece by binary search). */
  readonly ends: number[];
  /** With a pool, `blocks[i]` is the pool block behind `pieces[i]`, or undefined for an overflow block. */
  readonly blocks: (PoolBlock | undefined)[];
  /** How many entries of the lists are the file's. */
  count: number;
  length: number;
}

/** What the room for a file's second piece holds until it has one. */
const NO_PIECE = new Uint8Array(0);

/** Appends a piece to the file's lists: into the room made at its create, then by a push. */
function addPiece(file: MemoryFile, piece: Uint8Array, end: number, block: PoolBlock | undefined): void {
  const at = file.count;
  if (at < file.pieces.length) {
    file.pieces[at] = piece;
    file.ends[at] = end;
    file.blocks[at] = block;
  } else {
    file.pieces.push(piece);
    file.ends.push(end);
    file.blocks.push(block);
  }
  file.count = at + 1;
}

/**
 * The memory tier. Nothing here is durable. The work is synchronous; results are promises only to share TierFiles
 * with the disk tiers.
 *
 * Without a pool, a file is the list of the chunks written to it, kept as they are. With a pool (memory-pool.ts),
 * appended bytes are copied into pool blocks, so that a push fills memory allocated and faulted in at start instead
 * of keeping fresh buffers (page faults and GC for every kept byte). A file's blocks grow with it, up to MAX_BLOCK,
 * and its flush (the commit) moves the last block's bytes into a smaller block when they fit, so a committed file
 * wastes less than half of its last block. When the pool has no block of the size needed (fragmentation: the core
 * admits no more memory-file bytes than the pool holds), a plain GC-managed block is used instead, and counted.
 *
 * The copy is the one write of the pushed bytes to memory, not a cost on top of it: the receive body it reads was
 * reused and is still in the cache. Reading push bodies into the pool instead and keeping the batches where they
 * arrived (tried on 30 November, reverted) took copyChunks out of the profile and saved no CPU: the kernel's receive
 * into cold pool memory paid the same write (worker CPU 1.16-1.21 s per GiB against 1.09-1.26, system time up by
 * what user time fell). Copying a write's back-to-back batches in one call instead of one per 4 KiB batch saved
 * nothing measurable either.
 */
export class MemoryFiles implements TierFiles {
  private readonly files = new Map<string, MemoryFile>();
  private held = 0;
  private overflowHeld = 0;
  private overflowMade = 0;

  /** `onFirstOverflow`: called once, when the pool first cannot lend a block (for the worker's one warning). */
  constructor(
    private readonly pool?: MemoryPool,
    private readonly onFirstOverflow?: (blockBytes: number) => void,
  ) {}

  /** Bytes held by all memory files (the sum of their lengths). */
  get bytes(): number {
    return this.held;
  }

  /** Bytes of overflow blocks held now: blocks the pool could not lend, allocated from the heap instead. */
  get overflowBytes(): number {
    return this.overflowHeld;
  }

  /** Overflow blocks allocated since start (never decreases): the worker can log the first one. */
  get overflowBlocks(): number {
    return this.overflowMade;
  }

  create(id: string): Promise<void> {
    return settled(() => this.createNow(id));
  }

  append(id: string, chunks: readonly Uint8Array[]): Promise<void> {
    return settled(() => this.appendNow(id, chunks));
  }

  /** The commit: checks that the file exists and, with a pool, moves its tail into the smallest block that fits. */
  flush(id: string): Promise<void> {
    return settled(() => this.flushNow(id));
  }

  /** `flush` done at once: throws what `flush` would reject with. */
  flushNow(id: string): void {
    const file = this.require(id);
    if (this.pool !== undefined) this.compactTail(file, this.pool);
  }

  /**
   * A copy of [offset, offset + length), short at the end of the file. A copy, not a view of a stored piece: the
   * reader may keep or change its bytes while the file lives on (or after its blocks went to another file).
   */
  read(id: string, offset: number, length: number): Promise<Uint8Array> {
    return settled(() => this.readNow(id, offset, length));
  }

  /**
   * Views of the stored bytes, in order: a move hands them to the target tier without copying. With a pool they are
   * views of pool blocks, valid only until the file is removed (its blocks are then lent to other files); a move
   * awaits the target's `adopt` before removing the source.
   */
  contents(id: string): Promise<readonly Uint8Array[]> {
    return settled(() => {
      const file = this.require(id);
      return file.pieces.slice(0, file.count).map((piece, index) => {
        const used = usedBytesOf(file, index);
        return used === piece.length ? piece : piece.subarray(0, used);
      });
    });
  }

  /** A move into memory: kept as they are without a pool (the source lets go of them), copied into blocks with one. */
  adopt(id: string, _segments: readonly string[], chunks: readonly Uint8Array[]): Promise<void> {
    return settled(() => {
      this.createNow(id);
      this.appendNow(id, chunks);
    });
  }

  /** Removes the file and gives its blocks back to the pool; views from `contents` are invalid from now on. */
  remove(id: string): Promise<void> {
    const file = this.files.get(id);
    if (file !== undefined) {
      this.files.delete(id);
      this.held -= file.length;
      // Without a pool the pieces were the appended buffers: nothing to give back.
      if (this.pool !== undefined)
        for (let index = 0; index < file.count; index += 1)
          this.letGo(file.pieces[index]!, file.blocks[index]);
    }
    return Promise.resolve();
  }

  /** `create` done at once: throws what `create` would reject with. */
  createNow(id: string): void {
    if (this.files.has(id)) throw new IoFailure('EXISTS', `memory file ${id} exists`);
    this.files.set(id, {
      pieces: [NO_PIECE, NO_PIECE],
      ends: [0, 0],
      blocks: [undefined, undefined],
      count: 0,
      length: 0,
    });
  }

  /** `append` done at once: throws what `append` would reject with. */
  appendNow(id: string, chunks: readonly Uint8Array[]): void {
    const file = this.require(id);
    if (this.pool === undefined) this.keepChunks(file, chunks);
    else this.copyChunks(file, chunks, this.pool);
  }

  private keepChunks(file: MemoryFile, chunks: readonly Uint8Array[]): void {
    for (const chunk of chunks) {
      if (chunk.length === 0) continue;
      file.length += chunk.length;
      addPiece(file, chunk, file.length, undefined);
      this.held += chunk.length;
    }
  }

  /** Fills the last block's free room first, then new blocks sized for what is left of this append. */
  private copyChunks(file: MemoryFile, chunks: readonly Uint8Array[], pool: MemoryPool): void {
    let toPlace = 0;
    for (const chunk of chunks) toPlace += chunk.length;
    for (const chunk of chunks) {
      let copied = 0;
      while (copied < chunk.length) {
        if (roomOf(file) === 0) this.addBlock(file, toPlace, pool);
        const last = file.count - 1;
        const piece = file.pieces[last]!;
        const at = usedBytesOf(file, last);
        const n = Math.min(piece.length - at, chunk.length - copied);
        piece.set(n === chunk.length ? chunk : chunk.subarray(copied, copied + n), at);
        copied += n;
        toPlace -= n;
        file.length += n;
        file.ends[last] = file.length;
        this.held += n;
      }
    }
  }

  /**
   * A new last block, large enough for what this append still has to place and at least as large as the file
   * (up to MAX_BLOCK): a file's blocks grow geometrically, so a small file takes a small block and a large one
   * few blocks.
   */
  private addBlock(file: MemoryFile, toPlace: number, pool: MemoryPool): void {
    const size = blockSizeFor(Math.min(MAX_BLOCK, Math.max(toPlace, file.length)));
    const block = pool.allocate(size);
    addPiece(file, block?.bytes ?? this.overflowBlock(size), file.length, block);
  }

  /** Moves the last block's bytes into a smaller block when they fit one (a pool block is not traded for overflow). */
  private compactTail(file: MemoryFile, pool: MemoryPool): void {
    const last = file.count - 1;
    if (last < 0) return;
    const piece = file.pieces[last]!;
    const used = usedBytesOf(file, last);
    const size = blockSizeFor(used);
    if (size >= piece.length) return;
    const smaller = pool.allocate(size);
    const current = file.blocks[last];
    if (smaller === undefined && current !== undefined) return;
    const target = smaller?.bytes ?? this.overflowBlock(size);
    target.set(piece.subarray(0, used));
    this.letGo(piece, current);
    file.pieces[last] = target;
    file.blocks[last] = smaller;
  }

  /** A heap block standing in for a pool block the pool could not lend; collected once its file is gone. */
  private overflowBlock(size: number): Uint8Array {
    if (this.overflowMade === 0) this.onFirstOverflow?.(size);
    this.overflowHeld += size;
    this.overflowMade += 1;
    return unzeroedBytes(size);
  }

  private letGo(piece: Uint8Array, block: PoolBlock | undefined): void {
    if (block !== undefined) this.pool!.release(block);
    else this.overflowHeld -= piece.length;
  }

  private readNow(id: string, offset: number, length: number): Uint8Array {
    const file = this.require(id);
    const start = Math.min(offset, file.length);
    const out = unzeroedBytes(Math.max(0, Math.min(length, file.length - start)));
    let index = firstPieceEndingAfter(file.ends, file.count, start);
    let copied = 0;
    while (copied < out.length) {
      const piece = file.pieces[index]!;
      const from = start + copied - startOf(file, index);
      const n = Math.min(usedBytesOf(file, index) - from, out.length - copied);
      out.set(piece.subarray(from, from + n), copied);
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

/** The file offset of the first byte in `pieces[index]`. */
function startOf(file: MemoryFile, index: number): number {
  return index === 0 ? 0 : file.ends[index - 1]!;
}

function usedBytesOf(file: MemoryFile, index: number): number {
  return file.ends[index]! - startOf(file, index);
}

/** The free room at the end of the file's last piece (0 when it has none). */
function roomOf(file: MemoryFile): number {
  const last = file.count - 1;
  return last < 0 ? 0 : file.pieces[last]!.length - usedBytesOf(file, last);
}

/** The index of the first of `count` pieces whose end lies past `offset` (`count` when none does). */
function firstPieceEndingAfter(ends: readonly number[], count: number, offset: number): number {
  let low = 0;
  let high = count;
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
