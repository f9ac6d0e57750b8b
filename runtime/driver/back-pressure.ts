import {
  BackPressureGauge,
  type BackPressureLimits,
  type DataPort,
  type PortChange,
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
  private readonly gauge: BackPressureGauge;

  constructor(
    limits: BackPressureLimits,
    private readonly setPaused: (service: DataPort, paused: boolean) => void,
  ) {
    this.gauge = new BackPressureGauge(limits);
  }

  get bytesInFlight(): number {
    return this.gauge.bytesInFlight;
  }

  get partialFrameBytes(): number {
    return this.gauge.partialFrameBytes;
  }

  /** Bytes handed to the disks (positive) or written (negative). */
  change(delta: number): void {
    this.apply(this.gauge.change(delta));
  }

  /** What the connections' partly received frames hold now, all together. */
  setPartialFrameBytes(bytes: number): void {
    this.apply(this.gauge.setPartialFrameBytes(bytes));
  }

  private apply(change: PortChange): void {
    for (const port of change.pausedNow) this.setPaused(port, true);
    for (const port of change.resumedNow) this.setPaused(port, false);
  }
}
