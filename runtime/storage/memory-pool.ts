/** The smallest block handed out: one page, so that a block never shares a page with another. */
export const MIN_BLOCK = 4096;
/** The largest block handed out; the capacity is a whole number of these. */
export const MAX_BLOCK = 1 << 20;
/**
 * Arenas are at most this large: one ArrayBuffer of several GiB may fail to allocate where 64 MiB ones do not. A
 * multiple of MAX_BLOCK, so that no block straddles two arenas.
 */
const ARENA_BYTES = 64 << 20;

const GRANULE_SHIFT = Math.log2(MIN_BLOCK);
/** Orders 0..MAX_ORDER are the block sizes MIN_BLOCK..MAX_BLOCK. */
const MAX_ORDER = Math.log2(MAX_BLOCK / MIN_BLOCK);
const ARENA_GRANULE_SHIFT = Math.log2(ARENA_BYTES / MIN_BLOCK);
const ARENA_GRANULE_MASK = (1 << ARENA_GRANULE_SHIFT) - 1;
/** How many free MAX_BLOCK blocks a span larger than one looks at for a run of contiguous ones. */
const RUN_SEARCH_LIMIT = 64;
/** The page size assumed by pre-touching: one write per page faults it in. */
const PAGE_BYTES = 4096;

const NIL = -1;
/** Per-granule state: a granule inside a block (or the head of nothing) is 0; a block's first granule says more. */
const INSIDE = 0;
const FREE = 0x10; // | order
const USED = 0x20; // | order
const ORDER_MASK = 0x0f;

/**
 * One block lent by a MemoryPool: `bytes` is its memory (exactly the block's size). Give it back with `release`
 * once nothing reads `bytes` any more; the memory is then lent again.
 */
export class PoolBlock {
  /** @internal */
  constructor(
    readonly bytes: Uint8Array,
    /** @internal The block's first granule (4 KiB unit) in the pool. */
    readonly granule: number,
    /** @internal log2 of the block's size in granules. */
    readonly order: number,
    /** @internal Which lending of that granule this is: a stale block released again is caught by it. */
    readonly generation: number,
  ) {}
}

export interface MemoryPoolOptions {
  /** Rounded down to a multiple of MAX_BLOCK; 0 makes a pool that never lends anything. */
  readonly capacityBytes: number;
  /** Fault every page in now (like the JVM's AlwaysPreTouch) rather than on first use during a push. */
  readonly preTouch: boolean;
}

/**
 * Fixed memory for the memory tier, allocated once at construction and lent out in blocks of 4 KiB to 1 MiB (powers
 * of two). Keeping the pushed bytes in fresh buffers made the kernel fault in every kept page and V8 run major GCs
 * as its external memory grew; memory allocated (and touched) once costs neither during a push.
 *
 * A binary buddy allocator: every block has one buddy of the same size, and a released block merges with its free
 * buddy, repeatedly, so that freeing everything gives back whole MAX_BLOCK blocks. The bookkeeping is typed arrays
 * indexed by granule (4 KiB): a state byte, and per order a doubly linked free list, so that allocate and release
 * take O(log(MAX_BLOCK / MIN_BLOCK)) steps and leave no garbage but the PoolBlock and its view.
 */
export class MemoryPool {
  private readonly arenas: ArrayBuffer[] = [];
  private readonly state: Uint8Array;
  private readonly generation: Uint32Array;
  private readonly next: Int32Array;
  private readonly previous: Int32Array;
  /** The first free block of each order (NIL when none). */
  private readonly heads = new Int32Array(MAX_ORDER + 1).fill(NIL);
  private readonly capacity: number;
  private free: number;
  /** Per granule of a lent span: how many holders hold it (the body itself, then each piece kept of it); else 0. */
  private readonly spanHolds: Uint32Array;
  /** Per granule of a lent span, while its body is lent: the span's first granule (its name); else NIL. */
  private readonly spanStarts: Int32Array;
  private readonly arenaIndex = new Map<ArrayBufferLike, number>();
  /** Where the next span is tried first: right after the last one, so that spans lie back to back. */
  private spanCursor = 0;

  constructor(options: MemoryPoolOptions) {
    const { capacityBytes, preTouch } = options;
    if (!Number.isFinite(capacityBytes) || capacityBytes < 0)
      throw new RangeError(`a memory pool of ${capacityBytes} bytes`);
    this.capacity = Math.floor(capacityBytes / MAX_BLOCK) * MAX_BLOCK;
    this.free = this.capacity;
    const granules = this.capacity / MIN_BLOCK;
    this.state = new Uint8Array(granules);
    this.generation = new Uint32Array(granules);
    this.next = new Int32Array(granules);
    this.previous = new Int32Array(granules);
    this.spanHolds = new Uint32Array(granules);
    this.spanStarts = new Int32Array(granules).fill(NIL);
    for (let offset = 0; offset < this.capacity; offset += ARENA_BYTES) {
      const arena = new ArrayBuffer(Math.min(ARENA_BYTES, this.capacity - offset));
      if (preTouch) touchPages(arena);
      this.arenaIndex.set(arena, this.arenas.length);
      this.arenas.push(arena);
    }
    // Pushed from the end so that the first blocks lent are the lowest: a lightly used pool touches few arenas.
    const maxBlockGranules = 1 << MAX_ORDER;
    for (let granule = granules - maxBlockGranules; granule >= 0; granule -= maxBlockGranules) {
      this.pushFree(MAX_ORDER, granule);
    }
  }

  get capacityBytes(): number {
    return this.capacity;
  }

  get freeBytes(): number {
    return this.free;
  }

  get usedBytes(): number {
    return this.capacity - this.free;
  }

  /**
   * A block of `blockSizeFor(bytes)` bytes, split off a larger free block if need be; undefined when no free block
   * is large enough. Its contents are whatever its last user left there.
   */
  allocate(bytes: number): PoolBlock | undefined {
    const order = orderFor(bytes);
    const granule = this.take(order);
    if (granule === undefined) return undefined;
    const generation = this.lendGranule(granule, order);
    return new PoolBlock(this.viewOf(granule, order), granule, order, generation);
  }

  /** Gives the block back, merging it with its free buddy as far as possible. Throws on a block not lent now. */
  release(block: PoolBlock): void {
    this.checkLent(block);
    this.releaseAt(block.granule, block.order);
  }

  /**
   * A span: `bytes` bytes (any number up to an arena's size) of contiguous pool memory starting at a granule, for a
   * received frame body (runtime/wire/receive-bodies.ts); undefined when the pool has no room for it. Unlike a
   * block, it is given back granule by granule: each of its 4 KiB granules is held once, by the body, and
   * `holdSpanBytes` adds a holder to the granules under a view of it (a memory file keeping a batch of the body
   * where it is, rather than copying it), so that what the file keeps outlives the body and the rest of the body
   * goes back as soon as its holders are done. The granules past `bytes` in the block taken go back at once.
   */
  lendSpan(bytes: number): Uint8Array | undefined {
    if (!(bytes > 0 && bytes <= ARENA_BYTES)) throw new RangeError(`no span holds ${bytes} bytes`);
    const granules = Math.ceil(bytes / MIN_BLOCK);
    const first = this.carve(this.spanCursor, granules) ?? this.carveBlock(granules);
    if (first === undefined) return undefined;
    this.spanCursor = first + granules;
    this.spanHolds.fill(1, first, first + granules);
    this.spanStarts.fill(first, first, first + granules);
    const arena = this.arenas[first >>> ARENA_GRANULE_SHIFT]!;
    return new Uint8Array(arena, (first & ARENA_GRANULE_MASK) << GRANULE_SHIFT, bytes);
  }

  /** The first granule of the span whose body `view` lies in, while that body is lent; else undefined. */
  spanOf(view: Uint8Array): number | undefined {
    const arena = this.arenaIndex.get(view.buffer);
    if (arena === undefined) return undefined;
    const start = this.spanStarts[(arena << ARENA_GRANULE_SHIFT) | (view.byteOffset >>> GRANULE_SHIFT)];
    return start === undefined || start === NIL ? undefined : start;
  }

  /** Whether `view` is pool memory at all (of an arena): a block's or a span's. */
  owns(view: Uint8Array): boolean {
    return this.arenaIndex.has(view.buffer);
  }

  /**
   * One more holder of every granule under `view`, when all of them belong to a lent span (each still held);
   * false (nothing changes) otherwise. `releaseSpanBytes` with the same view lets go.
   */
  holdSpanBytes(view: Uint8Array): boolean {
    const range = this.granulesUnder(view);
    if (range === undefined) return false;
    for (let granule = range.first; granule <= range.last; granule += 1) {
      if (this.spanHolds[granule] === 0) return false;
    }
    for (let granule = range.first; granule <= range.last; granule += 1) this.spanHolds[granule]! += 1;
    return true;
  }

  /**
   * A holder of the granules under `view` lets go; those nobody holds any more go back to the pool (overwritten
   * with `scribble` first when given: a test's proof that nothing reads them after). Throws on granules not held.
   */
  releaseSpanBytes(view: Uint8Array, scribble?: number): void {
    const range = this.granulesUnder(view);
    if (range === undefined) throw new Error('memory pool: releasing span bytes the pool does not hold');
    for (let granule = range.first; granule <= range.last; granule += 1) {
      if (this.spanHolds[granule] === 0)
        throw new Error(`memory pool: span granule ${granule} is not held (released twice?)`);
    }
    for (let granule = range.first; granule <= range.last; granule += 1) {
      const holds = this.spanHolds[granule]! - 1;
      this.spanHolds[granule] = holds;
      if (holds > 0) continue;
      this.spanStarts[granule] = NIL;
      if (scribble !== undefined) this.viewOf(granule, 0).fill(scribble);
      this.releaseAt(granule, 0);
    }
  }

  /**
   * The body behind the span at `view` is no longer lent: `spanOf` stops naming it, and with `letGo` its own hold on
   * every granule goes (those no piece holds go back to the pool). Without, its granules stay held for good: a body
   * that reached a holder that never says when it is done.
   */
  endSpan(view: Uint8Array, letGo: boolean, scribble?: number): void {
    const range = this.granulesUnder(view);
    if (range === undefined) throw new Error('memory pool: ending a span the pool does not hold');
    this.spanStarts.fill(NIL, range.first, range.last + 1);
    if (letGo) this.releaseSpanBytes(view, scribble);
  }

  private granulesUnder(view: Uint8Array): { first: number; last: number } | undefined {
    const arena = this.arenaIndex.get(view.buffer);
    if (arena === undefined || view.byteLength === 0) return undefined;
    const base = arena << ARENA_GRANULE_SHIFT;
    return {
      first: base | (view.byteOffset >>> GRANULE_SHIFT),
      last: base | ((view.byteOffset + view.byteLength - 1) >>> GRANULE_SHIFT),
    };
  }

  /**
   * Lends the granules [first, first + count) as order-0 blocks when all are free and in one arena (the free blocks
   * they lie in are split around them); returns `first`, else undefined.
   */
  private carve(first: number, count: number): number | undefined {
    const end = first + count;
    if (end > this.state.length || first >>> ARENA_GRANULE_SHIFT !== (end - 1) >>> ARENA_GRANULE_SHIFT) {
      return undefined;
    }
    for (let granule = first; granule < end;) {
      const block = this.freeBlockAt(granule);
      if (block === NIL) return undefined;
      granule = block + (1 << (this.state[block]! & ORDER_MASK));
    }
    for (let granule = first; granule < end;) {
      const block = this.freeBlockAt(granule);
      const order = this.state[block]! & ORDER_MASK;
      const blockEnd = block + (1 << order);
      this.unlinkFree(order, block);
      this.state[block] = INSIDE;
      this.pushFreeRange(block, first);
      this.pushFreeRange(end, blockEnd);
      const upto = Math.min(blockEnd, end);
      for (; granule < upto; granule += 1) this.lendGranule(granule, 0);
    }
    return first;
  }

  /**
   * A span where the buddy allocator would put a block of its size (one of up to MAX_BLOCK, else a run of whole
   * MAX_BLOCK blocks): the granules past `count` in it go back at once.
   */
  private carveBlock(count: number): number | undefined {
    const fits = count <= 1 << MAX_ORDER;
    const order = fits ? orderFor(count * MIN_BLOCK) : MAX_ORDER;
    const first = fits ? this.take(order) : this.takeRun(count);
    if (first === undefined) return undefined;
    const taken = fits ? 1 << order : Math.ceil(count / (1 << MAX_ORDER)) << MAX_ORDER;
    for (let granule = first; granule < first + count; granule += 1) this.lendGranule(granule, 0);
    this.pushFreeRange(first + count, first + taken);
    return first;
  }

  /** The first granule of the free block that `granule` lies in; NIL when it lies in a lent one. */
  private freeBlockAt(granule: number): number {
    for (let order = 0; order <= MAX_ORDER; order += 1) {
      const head = granule & ~((1 << order) - 1);
      const state = this.state[head]!;
      if (state === INSIDE) continue;
      // The first head found covers `granule` (blocks are aligned to their size).
      return (state & ~ORDER_MASK) === FREE ? head : NIL;
    }
    return NIL;
  }

  /** Frees the granules [from, to), taken off the lists already, as the largest aligned blocks that cover them. */
  private pushFreeRange(from: number, to: number): void {
    let granule = from;
    while (granule < to) {
      let order = MAX_ORDER;
      while (order > 0 && (granule & ((1 << order) - 1)) !== 0) order -= 1;
      while (order > 0 && granule + (1 << order) > to) order -= 1;
      this.pushFree(order, granule);
      granule += 1 << order;
    }
  }

  /** The first granule of a free block of `order`, split off a larger one if need be (and taken off the lists). */
  private take(order: number): number | undefined {
    let found = order;
    while (found <= MAX_ORDER && this.heads[found] === NIL) found += 1;
    if (found > MAX_ORDER) return undefined;
    const granule = this.heads[found]!;
    this.unlinkFree(found, granule);
    // Split down to the size asked for: the upper half of each split stays free.
    while (found > order) {
      found -= 1;
      this.pushFree(found, granule + (1 << found));
    }
    return granule;
  }

  /**
   * The first granule of enough contiguous free MAX_BLOCK blocks, within one arena, for `granules` (taken off the
   * free list); undefined when none of the first RUN_SEARCH_LIMIT free blocks starts such a run.
   */
  private takeRun(granules: number): number | undefined {
    const step = 1 << MAX_ORDER;
    const blocks = Math.ceil(granules / step);
    let candidate = this.heads[MAX_ORDER]!;
    for (let tried = 0; candidate !== NIL && tried < RUN_SEARCH_LIMIT; tried += 1) {
      const end = candidate + blocks * step - 1;
      let free = end < this.state.length && end >>> ARENA_GRANULE_SHIFT === candidate >>> ARENA_GRANULE_SHIFT;
      for (let block = 1; free && block < blocks; block += 1) {
        free = this.state[candidate + block * step] === (FREE | MAX_ORDER);
      }
      if (free) {
        for (let block = 0; block < blocks; block += 1) this.unlinkFree(MAX_ORDER, candidate + block * step);
        return candidate;
      }
      candidate = this.next[candidate]!;
    }
    return undefined;
  }

  /** Marks the block at `granule` lent (taken off the free lists already); returns its new generation. */
  private lendGranule(granule: number, order: number): number {
    this.state[granule] = USED | order;
    const generation = (this.generation[granule]! + 1) >>> 0;
    this.generation[granule] = generation;
    this.free -= MIN_BLOCK << order;
    return generation;
  }

  /** Frees the lent block at `granule` and merges it with its free buddy as far as possible. */
  private releaseAt(at: number, blockOrder: number): void {
    let granule = at;
    let order = blockOrder;
    this.state[granule] = INSIDE;
    this.free += MIN_BLOCK << order;
    while (order < MAX_ORDER) {
      const buddy = granule ^ (1 << order);
      if (this.state[buddy] !== (FREE | order)) break;
      this.unlinkFree(order, buddy);
      this.state[buddy] = INSIDE;
      granule = Math.min(granule, buddy);
      order += 1;
    }
    this.pushFree(order, granule);
  }

  /** Releasing twice, or a block of another pool, is a bug that would hand one block to two files: never silent. */
  private checkLent(block: PoolBlock): void {
    const { granule, order } = block;
    const lent =
      Number.isInteger(granule) &&
      granule >= 0 &&
      granule < this.state.length &&
      this.arenas[granule >>> ARENA_GRANULE_SHIFT] === block.bytes.buffer &&
      this.state[granule] === (USED | order) &&
      this.generation[granule] === block.generation;
    if (!lent)
      throw new Error(`memory pool: block at granule ${granule} is not lent by this pool (released twice?)`);
  }

  private viewOf(granule: number, order: number): Uint8Array {
    const arena = this.arenas[granule >>> ARENA_GRANULE_SHIFT]!;
    return new Uint8Array(arena, (granule & ARENA_GRANULE_MASK) << GRANULE_SHIFT, MIN_BLOCK << order);
  }

  private pushFree(order: number, granule: number): void {
    const head = this.heads[order]!;
    this.next[granule] = head;
    this.previous[granule] = NIL;
    if (head !== NIL) this.previous[head] = granule;
    this.heads[order] = granule;
    this.state[granule] = FREE | order;
  }

  private unlinkFree(order: number, granule: number): void {
    const before = this.previous[granule]!;
    const after = this.next[granule]!;
    if (before === NIL) this.heads[order] = after;
    else this.next[before] = after;
    if (after !== NIL) this.previous[after] = before;
  }
}

/** The size of the block `allocate(bytes)` lends: the next power of two, at least MIN_BLOCK. */
export function blockSizeFor(bytes: number): number {
  return MIN_BLOCK << orderFor(bytes);
}

function orderFor(bytes: number): number {
  if (!(bytes > 0 && bytes <= MAX_BLOCK)) throw new RangeError(`no pool block holds ${bytes} bytes`);
  const granules = Math.ceil(bytes / MIN_BLOCK);
  return granules === 1 ? 0 : 32 - Math.clz32(granules - 1);
}

/**
 * One write per page faults each page in now. Measured on 1 GiB: about as fast as `fill(0)` (0.51 s against 0.55 s,
 * both the kernel's page faults), and it writes 1/4096 of the bytes.
 */
function touchPages(arena: ArrayBuffer): void {
  const bytes = new Uint8Array(arena);
  for (let offset = 0; offset < bytes.length; offset += PAGE_BYTES) bytes[offset] = 0;
}
