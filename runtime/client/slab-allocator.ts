import { unzeroedBytes } from '../unzeroed-bytes.ts';

/** What a slab holds; a buffer larger than an eighth of it is allocated on its own. */
const SLAB_BYTES = 64 * 1024;
const LARGEST_CUT = SLAB_BYTES / 8;

/**
 * A map task's allocator (MapTaskConfig.allocate): buffers of a few KiB cut from 64 KiB slabs, larger ones
 * allocated alone. A chunk of 4 KiB and a frame header is just above what Node's buffer pool cuts from its own
 * slabs, so every chunk of a map over 10,000 partitions was an allocation of its own, outside V8's heap, and most of
 * the client's collection (docs/performance.md). Each task has its own allocator: a slab is kept alive by any of its
 * cuts, so cuts of one task never hold memory of another's. The task still counts each cut at its length; a slab
 * lives at most until the last cut from it is dropped (the task's end lets every one go).
 */
export function slabAllocator(): (length: number) => Uint8Array {
  let slab: ArrayBufferLike | undefined;
  let slabOffset = 0;
  let used = SLAB_BYTES;
  return (length) => {
    if (length > LARGEST_CUT) return unzeroedBytes(length);
    const taken = (length + 7) & ~7; // cuts start on 8-byte boundaries, as the pool's do
    if (slab === undefined || used + taken > SLAB_BYTES) {
      const fresh = unzeroedBytes(SLAB_BYTES);
      slab = fresh.buffer;
      slabOffset = fresh.byteOffset;
      used = 0;
    }
    const cut = new Uint8Array(slab, slabOffset + used, length);
    used += taken;
    return cut;
  };
}
