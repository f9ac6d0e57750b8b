import { mapTaskBudgetOf } from '../../conf/machine-configs.ts';
import type { ResolvedConfig } from '../../conf/resolve.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';

/** An executor's kept batch memory goes after this long without a task allocating (as its chunk bodies do). */
export const MAP_BUFFERS_IDLE_MS = 30_000;

/** What a slab holds; a buffer larger than an eighth of it is allocated on its own. */
const SLAB_BYTES = 64 * 1024;
const LARGEST_CUT = SLAB_BYTES / 8;

/**
 * An executor's MapBuffers: it keeps up to a map task's budget (`svc.client.push.maxUnacknowledgedBytes`), so that
 * the batches of the maps it runs at once come back to the next maps rather than to the collector. With a quarter
 * (what one task keeps as spares of its own), eight maps of 4 MiB at once gave most of their batch memory up at each
 * end, and the next ones wrote their batches into fresh memory: a page fault per 4 KiB, 15-20 us each on the VM of
 * docs/performance.md (28,500 of them in the small-batches row's copies, 7,300 with the whole budget).
 */
export function executorMapBuffers(conf: ResolvedConfig): MapBuffers {
  return new MapBuffers(mapTaskBudgetOf(conf));
}

/**
 * An executor's memory for its map tasks' batches (MapTaskConfig.allocate and giveBack): the chunks and frames a
 * task lets go are kept, up to `keptBytes`, and handed to the next task that asks for that length, the most
 * recently given back first (its memory the likeliest still in the CPU's caches).
 *
 * Each task used to allocate all its buffers fresh and leave them to the collector at its end, so a task of a few
 * MiB wrote nothing but fresh memory: allocating a 64 KiB buffer costs 8-22 us, and writing each of its pages the
 * first time a page fault, about a tenth of the small-batches client's CPU (docs/performance.md). A buffer comes
 * back only once nothing else holds it (the task says so: core/machines/client/map-task.ts), so handing it to
 * another task is safe.
 *
 * Buffers of a few KiB (a chunk of an open batch: a frame header and 4 KiB) are cut from 64 KiB slabs: just above
 * what Node's buffer pool cuts from its own slabs, each would otherwise be an allocation of its own outside V8's
 * heap. A slab is kept alive by any of its cuts; the cuts given back are what the pool keeps, so a slab is stranded
 * only by cuts still in use while the pool is full or let go. What was kept goes once the executor has allocated
 * nothing for MAP_BUFFERS_IDLE_MS (`dropIdle`, called by the executor's timer).
 */
export class MapBuffers {
  private readonly free = new Map<number, Uint8Array[]>();
  private freeBytes = 0;
  private slab: ArrayBufferLike | undefined;
  private slabOffset = 0;
  private slabUsed = SLAB_BYTES;
  private allocatedSinceDrop = false;

  constructor(private readonly keptBytes: number) {}

  /** Bytes kept for later tasks. */
  get keptNow(): number {
    return this.freeBytes;
  }

  /** A buffer of exactly `length` bytes, not zero-filled: one given back, or new. */
  readonly allocate = (length: number): Uint8Array => {
    this.allocatedSinceDrop = true;
    const kept = this.free.get(length)?.pop();
    if (kept !== undefined) {
      this.freeBytes -= length;
      return kept;
    }
    if (length > LARGEST_CUT) return unzeroedBytes(length);
    const taken = (length + 7) & ~7; // cuts start on 8-byte boundaries, as the pool's do
    if (this.slab === undefined || this.slabUsed + taken > SLAB_BYTES) {
      const fresh = unzeroedBytes(SLAB_BYTES);
      this.slab = fresh.buffer;
      this.slabOffset = fresh.byteOffset;
      this.slabUsed = 0;
    }
    const cut = new Uint8Array(this.slab, this.slabOffset + this.slabUsed, length);
    this.slabUsed += taken;
    return cut;
  };

  /** Takes back a buffer nothing else holds any more: kept if there is room, else left to the collector. */
  readonly giveBack = (buffer: Uint8Array): void => {
    if (this.freeBytes + buffer.length > this.keptBytes) return;
    let list = this.free.get(buffer.length);
    if (list === undefined) {
      list = [];
      this.free.set(buffer.length, list);
    }
    list.push(buffer);
    this.freeBytes += buffer.length;
  };

  /** Lets everything kept go if nothing was allocated since the last call: an idle executor holds no batch memory. */
  dropIdle(): void {
    if (!this.allocatedSinceDrop) {
      this.free.clear();
      this.freeBytes = 0;
      this.slab = undefined;
      this.slabUsed = SLAB_BYTES;
    }
    this.allocatedSinceDrop = false;
  }
}
