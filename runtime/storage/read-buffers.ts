import { unzeroedBytes } from '../unzeroed-bytes.ts';

/**
 * The buffers a worker reads served chunks into, used again once the transport has written them. A fresh 8 MiB
 * buffer per chunk made a fetching worker spend most of its time collecting them (docs/performance.md, item 4).
 *
 * `take` lends a buffer (from the free ones of its size, or a new one, never zero-filled: every byte handed out is
 * read from the file first); `giveBack` returns the buffers behind views that were lent here, once nothing will read
 * them again (the transport calls it when a frame's pieces are written to the socket), and ignores any other view.
 * A lent buffer that never comes back (its chunk was not sent: the reader went away) is simply collected. At most
 * `budgetBytes` of free buffers are kept (svc.worker.directMemoryRatioForReadBuffer of the memory budget).
 */
export class ReadBuffers {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private freeBytes = 0;
  private readonly lent = new WeakSet<ArrayBuffer>();

  constructor(private readonly budgetBytes: number) {}

  /** A view of `length` bytes whose contents are undefined until written. */
  take(length: number): Uint8Array {
    const capacity = capacityFor(length);
    if (length === 0 || capacity > this.budgetBytes) return unzeroedBytes(length);
    let buffer = this.free.get(capacity)?.pop();
    // allocUnsafeSlow: a buffer of its own, never a slice of Node's shared pool that others use too.
    if (buffer === undefined) buffer = Buffer.allocUnsafeSlow(capacity).buffer;
    else this.freeBytes -= capacity;
    this.lent.add(buffer);
    return new Uint8Array(buffer, 0, length);
  }

  /** Takes back what was lent behind `views` (each buffer once); anything else is left alone. */
  giveBack(views: readonly Uint8Array[]): void {
    for (const view of views) {
      const buffer = view.buffer as ArrayBuffer;
      if (!this.lent.has(buffer)) continue;
      this.lent.delete(buffer);
      const capacity = buffer.byteLength;
      if (this.freeBytes + capacity > this.budgetBytes) continue;
      const list = this.free.get(capacity);
      if (list === undefined) this.free.set(capacity, [buffer]);
      else list.push(buffer);
      this.freeBytes += capacity;
    }
  }

  /** Bytes of free buffers kept for reuse. */
  get keptBytes(): number {
    return this.freeBytes;
  }
}

/** Sizes are rounded up to whole MiB, so that chunks of nearly the same size share buffers. */
const GRANULE = 1 << 20;

function capacityFor(length: number): number {
  return Math.max(GRANULE, Math.ceil(length / GRANULE) * GRANULE);
}
