import {
  backPressureDecision,
  type BackPressureLimits,
  type PausedPorts,
} from '../../core/storage/back-pressure.ts';

export type { BackPressureLimits } from '../../core/storage/back-pressure.ts';

/**
 * The worker's flow control: counts the bytes it holds for data in flight (received, handed to the disks, not yet
 * written) and the bytes of frames its connections have partly received, and applies the core's decision
 * (core/storage/back-pressure.ts): stop reading from push connections above one threshold and from replication
 * connections above a higher one, until the count falls below the resume threshold. Reading stops at the socket, so TCP's own window holds the
 * clients back and nothing is buffered without bound; heartbeats and fetches (other ports) go on. Memory-tier
 * files are not counted: their own capacity bounds them and eviction empties them, and counting bytes that only a
 * later write could release would pause a worker for good.
 */
export class BackPressure {
  private inFlight = 0;
  private partialFrames = 0;
  private paused: PausedPorts = { push: false, replicate: false };

  constructor(
    private readonly limits: BackPressureLimits,
    private readonly setPaused: (service: 'push' | 'replicate', paused: boolean) => void,
  ) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  get partialFrameBytes(): number {
    return this.partialFrames;
  }

  /** Bytes handed to the disks (positive) or written (negative). */
  change(delta: number): void {
    this.inFlight += delta;
    this.decide();
  }

  /** What the connections' partly received frames hold now, all together. */
  setPartialFrameBytes(bytes: number): void {
    this.partialFrames = bytes;
    this.decide();
  }

  private decide(): void {
    const before = this.paused;
    const next = backPressureDecision(
      this.limits,
      { inFlightBytes: this.inFlight, partialFrameBytes: this.partialFrames },
      before,
    );
    this.paused = next;
    if (next.push !== before.push) this.setPaused('push', next.push);
    if (next.replicate !== before.replicate) this.setPaused('replicate', next.replicate);
  }
}
