import type { ClientSettings } from './client-config.ts';
import { ReceiveBodies } from '../wire/index.ts';

/** An idle executor lets its kept chunk bodies go after this long without a large frame (as a worker does). */
const IDLE_MS = 30_000;

/** What a pooled body's capacity may exceed its chunk by (receive-bodies.ts rounds capacities to 512 KiB). */
const ROUNDING_BYTES = 512 * 1024;

/**
 * An executor's chunk bodies (runtime/wire/receive-bodies.ts): while a read with `reuseChunkMemory` runs, its
 * connections read large frames into the pool, and such a read gives each chunk's body back once consumed
 * (./partition-reader.ts); otherwise every frame is fresh memory of its exact size, as without a pool. At most one
 * read-ahead's worth is kept free (`svc.client.fetch.maxReqsInFlight` chunks of `svc.shuffle.chunk.size`), and
 * nothing once idle.
 */
export class ChunkBodies {
  readonly pool: ReceiveBodies;
  private lendingReads = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(client: ClientSettings) {
    const ahead = Math.max(1, client.conf.getInt('svc.client.fetch.maxReqsInFlight'));
    const chunkBytes = client.conf.getBytes('svc.shuffle.chunk.size');
    this.pool = new ReceiveBodies({
      keptBytes: ahead * (chunkBytes + ROUNDING_BYTES),
      lends: () => this.lendingReads > 0,
    });
    this.timer = setInterval(() => this.pool.dropIdle(), IDLE_MS);
    this.timer.unref();
  }

  /** A read that gives its chunks back starts; `end` is called once when it ended. */
  begin(): { end(): void } {
    this.lendingReads += 1;
    let ended = false;
    return {
      end: () => {
        if (ended) return;
        ended = true;
        this.lendingReads -= 1;
      },
    };
  }

  close(): void {
    clearInterval(this.timer);
  }
}
