import {
  backPressureDecision,
  type BackPressureLimits,
  type PausedPorts,
} from '../../core/storage/back-pressure.ts';

export type PausedService = 'push' | 'replicate';

/**
 * A simulated worker's back-pressure, as the runtime's (runtime/driver/back-pressure.ts): the bytes it handed to its
 * disks and that are not yet written, and the core's decision (core/storage/back-pressure.ts) of which data ports
 * it reads. The world holds the arrivals of a paused port, in order, until it resumes, as a runtime worker stops
 * reading the socket at a frame's end. Messages arrive whole here, so partly received frames hold nothing.
 */
export class WorkerBackPressure {
  private inFlight = 0;
  private paused: PausedPorts = { push: false, replicate: false };

  constructor(private readonly limits: BackPressureLimits) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  isPaused(service: PausedService): boolean {
    return this.paused[service];
  }

  /** Bytes handed to the disks (positive) or written (negative); returns whether some port resumed. */
  change(delta: number): boolean {
    this.inFlight += delta;
    const before = this.paused;
    this.paused = backPressureDecision(
      this.limits,
      { inFlightBytes: this.inFlight, partialFrameBytes: 0 },
      before,
    );
    return (before.push && !this.paused.push) || (before.replicate && !this.paused.replicate);
  }
}
