/** Thresholds in bytes of the worker's memory budget (`svc.worker.memory.size` × the directMemoryRatio* keys). */
export interface BackPressureLimits {
  readonly pauseReceiveBytes: number;
  readonly pauseReplicateBytes: number;
  readonly resumeBytes: number;
}

/**
 * The worker's flow control: counts the bytes it holds for data in flight (received, handed to the disks, not yet
 * written), and stops reading from push connections above one threshold and from replication connections
 * above a higher one, until the count falls below the resume threshold. Reading stops at the socket, so TCP's own
 * window holds the clients back and nothing is buffered without bound; heartbeats and fetches (other ports) go on.
 * Memory-tier files are not counted: their own capacity bounds them and eviction empties them, and counting bytes
 * that only a later write could release would pause a worker for good.
 */
export class BackPressure {
  private inFlight = 0;

  constructor(
    private readonly limits: BackPressureLimits,
    private readonly setPaused: (service: 'push' | 'replicate', paused: boolean) => void,
  ) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  /** Bytes handed to the disks (positive) or written (negative). */
  change(delta: number): void {
    this.inFlight += delta;
    const held = this.inFlight;
    if (held >= this.limits.pauseReplicateBytes) {
      this.setPaused('push', true);
      this.setPaused('replicate', true);
    } else if (held >= this.limits.pauseReceiveBytes) {
      this.setPaused('push', true);
    } else if (held <= this.limits.resumeBytes) {
      this.setPaused('push', false);
      this.setPaused('replicate', false);
    }
  }
}
