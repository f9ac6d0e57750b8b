import { unzeroedBytes } from '../unzeroed-bytes.ts';
import { forgetChecksums } from './batch-checksums.ts';
import { EAGER_BODY_BYTES } from './frame-reader.ts';

/** Where a frame reader takes the buffer of a frame too large for its slab (or, for `FrameReader`, split across reads). */
export interface BodySource {
  /** A buffer of exactly `length` bytes, every one of which the reader writes before handing it out. */
  take(length: number): Uint8Array;
}

/** Frames below this size are views of a reader's slab, never a body of their own: the pool does not keep them. */
export const POOLED_BODY_MIN_BYTES = 64 * 1024;

/**
 * The free bodies a worker keeps: 16 merged pushes of the default 2 MiB (svc.client.push.merge.maxSize), what a few
 * map tasks keep in flight to one worker, and less than the 64 MiB of free heap the allocator is told to keep
 * resident anyway (MALLOC_TRIM_THRESHOLD_, docs/operations.md): fresh bodies came from that memory before.
 */
export const RECEIVE_BODIES_KEPT_BYTES = 32 * 1024 * 1024;

/** Capacities are whole multiples of this, so that bodies of nearly the same size share buffers. */
const GRANULE = 512 * 1024;

/** Byte written over a body given back, in tests: a holder that still reads it sees damage, not old data. */
export const SCRIBBLE_BYTE = 0xa5;

export interface ReceiveBodiesOptions {
  /** The most bytes of free bodies kept; default RECEIVE_BODIES_KEPT_BYTES. */
  readonly keptBytes?: number;
  /** Test only: every body given back is overwritten first, so that a holder left behind reads damage. */
  readonly scribble?: boolean;
  /** Called the first time a body is lent again (a test's proof that bodies are reused). */
  readonly onFirstReuse?: () => void;
  /**
   * Whether bodies are lent now (default: always): while not, `take` gives fresh memory of exactly the length, as a
   * reader without a pool would (an executor lends only while a read gives its chunks back).
   */
  readonly lends?: () => boolean;
}

/** What is known of a body lent out: how many holders hold it, and whether its whole lifetime is tracked. */
interface Lent {
  holds: number;
  /**
   * `unclaimed`: handed out by a reader, nobody tracks what it reaches yet (released to nobody, it is simply
   * forgotten); `claimed`: an owner that knows every holder took it, so it goes back to the pool once the last one
   * lets go; `escaped`: it reached a holder that will never say so, and is never reused.
   */
  state: 'unclaimed' | 'claimed' | 'escaped';
}

/**
 * Large frame bodies a worker's (or an executor's) connections read into, lent again once nothing refers to them any more
 * (docs/performance.md, "Fresh memory": copying 2 MiB into fresh memory took 25-89 ms under load, into memory
 * already touched 0.15 ms). The lifetime is explicit: a body is lent with one hold (the connection's, while it
 * delivers the frame); an owner that knows everything the frame can reach claims it and holds it for each holder
 * (runtime/driver/push-body-holds.ts: the machine until it answered the push, each disk write, each forward to a
 * replica until written); each holder releases what it held, and the body goes back to the pool when the last one
 * did. A body nobody claimed, or that escaped, is never lent again: it is left to the garbage collector, as every
 * body was before. Holds and releases name a body by any view of it (its ArrayBuffer); views of other memory are
 * ignored, so holders need not know where their bytes came from.
 *
 * Bounded: at most `keptBytes` of free bodies (RECEIVE_BODIES_KEPT_BYTES), and `dropIdle`, called on an interval,
 * lets them all go when none was taken since its last call, so an idle worker keeps none.
 */
export class ReceiveBodies implements BodySource {
  private readonly free: ArrayBuffer[] = [];
  private freeBytes = 0;
  private readonly lent = new WeakMap<ArrayBufferLike, Lent>();
  private readonly keptLimit: number;
  private takenSinceIdleCheck = false;
  private reusedCount = 0;
  private freshCount = 0;

  constructor(private readonly options: ReceiveBodiesOptions = {}) {
    this.keptLimit = options.keptBytes ?? RECEIVE_BODIES_KEPT_BYTES;
  }

  /** A body of exactly `length` bytes, lent with one hold; outside the pooled sizes, a fresh buffer. */
  take(length: number): Uint8Array {
    if (length < POOLED_BODY_MIN_BYTES || length > EAGER_BODY_BYTES || this.options.lends?.() === false) {
      return unzeroedBytes(length);
    }
    this.takenSinceIdleCheck = true;
    let buffer = this.takeFree(length);
    if (buffer === undefined) {
      // allocUnsafeSlow: a buffer of its own, never a slice of Node's shared pool that others use too.
      buffer = Buffer.allocUnsafeSlow(Math.ceil(length / GRANULE) * GRANULE).buffer;
      this.freshCount += 1;
    } else {
      // A checksum remembered for the bytes it held before must not answer for the bytes it will hold.
      forgetChecksums(buffer);
      this.reusedCount += 1;
      if (this.reusedCount === 1) this.options.onFirstReuse?.();
    }
    this.lent.set(buffer, { holds: 1, state: 'unclaimed' });
    return new Uint8Array(buffer, 0, length);
  }

  /**
   * The caller knows every holder the body behind `view` can reach, and holds it for each: from now on, the last
   * release gives it back. False (nothing changes) for memory not lent here or no longer lent.
   */
  claim(view: Uint8Array): boolean {
    const lent = this.lent.get(view.buffer);
    if (lent === undefined) return false;
    if (lent.state === 'unclaimed') lent.state = 'claimed';
    return true;
  }

  /** One more holder of the body behind `view` (nothing for other memory). */
  hold(view: Uint8Array): void {
    const lent = this.lent.get(view.buffer);
    if (lent !== undefined) lent.holds += 1;
  }

  /** A holder of the body behind `view` is done with it; the last one gives a claimed body back. */
  release(view: Uint8Array): void {
    const buffer = view.buffer;
    const lent = this.lent.get(buffer);
    if (lent === undefined) return;
    lent.holds -= 1;
    if (lent.holds > 0) return;
    this.lent.delete(buffer);
    if (lent.state === 'claimed') this.giveBack(buffer as ArrayBuffer);
  }

  /** The body behind `view` reached a holder that will not release it: it is never lent again. */
  escape(view: Uint8Array): void {
    const lent = this.lent.get(view.buffer);
    if (lent !== undefined) lent.state = 'escaped';
  }

  /** Whether `view` is memory lent here and not yet given back. */
  isLent(view: Uint8Array): boolean {
    return this.lent.has(view.buffer);
  }

  /** Lets every free body go when none was taken since the last call (an idle worker keeps none). */
  dropIdle(): void {
    if (!this.takenSinceIdleCheck) {
      this.free.length = 0;
      this.freeBytes = 0;
    }
    this.takenSinceIdleCheck = false;
  }

  /** Bytes of free bodies kept for reuse. */
  get keptBytes(): number {
    return this.freeBytes;
  }

  /** Bodies lent again, and bodies allocated, since start. */
  get counts(): { readonly reused: number; readonly fresh: number } {
    return { reused: this.reusedCount, fresh: this.freshCount };
  }

  /** The smallest free buffer that holds `length` bytes and is not more than twice their size. */
  private takeFree(length: number): ArrayBuffer | undefined {
    let best = -1;
    for (let index = 0; index < this.free.length; index += 1) {
      const capacity = this.free[index]!.byteLength;
      if (capacity < length || capacity > 2 * length + GRANULE) continue;
      if (best < 0 || capacity < this.free[best]!.byteLength) best = index;
    }
    if (best < 0) return undefined;
    const buffer = this.free[best]!;
    this.free[best] = this.free[this.free.length - 1]!;
    this.free.pop();
    this.freeBytes -= buffer.byteLength;
    return buffer;
  }

  private giveBack(buffer: ArrayBuffer): void {
    if (this.options.scribble === true) new Uint8Array(buffer).fill(SCRIBBLE_BYTE);
    if (this.freeBytes + buffer.byteLength > this.keptLimit) return;
    this.free.push(buffer);
    this.freeBytes += buffer.byteLength;
  }
}

/** The distinct lent bodies among `views`, each once (a forward's payloads are all views of one body). */
export function lentBodiesOf(bodies: ReceiveBodies, views: readonly Uint8Array[]): Uint8Array[] {
  const found: Uint8Array[] = [];
  // A merged push's payloads (a hundred 4 KiB batches) are views of one or two bodies: comparing buffers with the
  // few found costs less than asking the pool about each view.
  let previous: ArrayBufferLike | undefined;
  for (const view of views) {
    const buffer = view.buffer;
    if (buffer === previous) continue;
    previous = buffer;
    if (isKnown(found, buffer) || !bodies.isLent(view)) continue;
    found.push(view);
  }
  return found;
}

function isKnown(found: readonly Uint8Array[], buffer: ArrayBufferLike): boolean {
  for (const known of found) if (known.buffer === buffer) return true;
  return false;
}
