import {
  nextStallCheck,
  partialFramesToShed,
  stalledFramesToShed,
} from '../../core/storage/back-pressure.ts';

/** Why a connection was closed for the frame it held: past the limit, or stalled while frames pause the ports. */
export type FrameGivenUpCause = 'receiveMemoryFull' | 'frameStalled';

/** A connection as the count sees it: closed to give its memory back. */
export interface HoldingConnection {
  destroy(reason: string, cause?: string): void;
}

export interface ReceiveMemoryOptions {
  /**
   * The most bytes all partly received frames of the process may hold (read at each growth); past it the largest
   * holders are closed until the rest fit (core/storage/back-pressure.ts, `partialFramesToShed`). Absent: no limit.
   */
  readonly limitBytes?: number | (() => number);
  /** The key that sets the limit, named in the reason a connection is closed with. */
  readonly limitKey?: string;
  /** Called after every change of the total. */
  readonly changed?: (totalBytes: number) => void;
  /** Called for each connection closed to give its frame's memory back (PartialFrameGivenUpCount). */
  readonly gaveUp?: (cause: FrameGivenUpCause) => void;
  /**
   * A worker's: above `pauseBytes` its data ports are paused (core/storage/back-pressure.ts,
   * `partialFramePauseBytes`), and a frame under way for `stalledMs` is then given up (`stalledFramesToShed`), so
   * that a peer that stops sending holds the others back no longer than that.
   */
  readonly stalled?: {
    readonly pauseBytes: number;
    readonly stalledMs: number;
    /** The clock, in ms (default: performance.now). */
    readonly now?: () => number;
  };
}

/**
 * The bytes a process holds for frames it has partly received, over all its connections: each connection tells
 * what its reader holds after every read, and gives it all back when it closes. Past the limit (the master's
 * svc.master.receive.maxPartialFrameBytes; on a worker, its resume threshold) the connections holding the most are
 * closed, so that a peer that begins huge frames and stalls cannot keep other peers' frames out; the worker also
 * counts them in its back-pressure (docs/operations.md, "Limits and hostile peers").
 */
export class ReceiveMemory<C extends HoldingConnection = HoldingConnection> {
  private readonly held = new Map<C, number>();
  /** When each holder's frame under way began to hold bytes (kept only with `stalled`). */
  private readonly since = new Map<C, number>();
  private total = 0;
  private stallTimer: NodeJS.Timeout | undefined;
  /** The clock of the stall check; none without one. */
  private readonly clock: (() => number) | undefined;

  constructor(private readonly options: ReceiveMemoryOptions = {}) {
    const stalled = options.stalled;
    this.clock = stalled === undefined ? undefined : (stalled.now ?? (() => performance.now()));
  }

  get totalBytes(): number {
    return this.total;
  }

  /** Connections that hold something now. */
  get holders(): number {
    return this.held.size;
  }

  /** `connection` now holds `bytes`; past the limit, the largest holders (maybe this one) are closed. */
  update(connection: C, bytes: number): void {
    const before = this.held.get(connection) ?? 0;
    if (bytes === before) return;
    this.set(connection, before, bytes);
    if (bytes < before) return;
    const limit =
      typeof this.options.limitBytes === 'function' ? this.options.limitBytes() : this.options.limitBytes;
    if (limit === undefined || this.total <= limit) return;
    const connections = [...this.held.keys()];
    const sizes = connections.map((held) => this.held.get(held)!);
    const total = this.total;
    for (const index of partialFramesToShed(sizes, limit)) {
      // Destroying gives the bytes back at once (release), so the next victim is counted against the rest.
      connections[index]!.destroy(
        `the process holds ${total} bytes of partly received frames, more than its limit of ${limit} ` +
          `(${this.options.limitKey ?? 'the limit'}): this connection's frame, of ${sizes[index]} bytes so far, ` +
          'is the largest and is given up',
        'receiveMemoryFull',
      );
      this.release(connections[index]!);
      this.options.gaveUp?.('receiveMemoryFull');
    }
  }

  /** The connection closed: what it held is free again. */
  release(connection: C): void {
    const before = this.held.get(connection);
    if (before !== undefined) this.set(connection, before, 0);
  }

  /** Stops the check for stalled frames (the process is stopping). */
  close(): void {
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  private set(connection: C, before: number, bytes: number): void {
    if (bytes === 0) {
      this.held.delete(connection);
      this.since.delete(connection);
    } else {
      this.held.set(connection, bytes);
      if (before === 0 && this.clock !== undefined) this.since.set(connection, this.clock());
    }
    this.total += bytes - before;
    if (bytes !== before) this.options.changed?.(this.total);
    if (bytes > before) this.armStallCheck();
  }

  /** While the frames hold more than the pause threshold, a check when the oldest of them turns stalled. */
  private armStallCheck(): void {
    const stalled = this.options.stalled;
    if (stalled === undefined || this.stallTimer !== undefined) return;
    const at = nextStallCheck(this.total, this.since.values(), stalled.pauseBytes, stalled.stalledMs);
    if (at === undefined) return;
    this.stallTimer = setTimeout(() => this.checkStalled(), Math.max(0, at - this.clock!()));
    this.stallTimer.unref();
  }

  private checkStalled(): void {
    this.stallTimer = undefined;
    const stalled = this.options.stalled!;
    const connections = [...this.held.keys()];
    const now = this.clock!();
    const frames = connections.map((connection) => ({
      bytes: this.held.get(connection)!,
      since: this.since.get(connection)!,
    }));
    const total = this.total;
    for (const index of stalledFramesToShed(frames, now, stalled.pauseBytes, stalled.stalledMs)) {
      connections[index]!.destroy(
        `the process holds ${total} bytes of partly received frames, more than ${stalled.pauseBytes} at which ` +
          `it stops reading new ones: this connection's frame, of ${frames[index]!.bytes} bytes so far, has been ` +
          `under way for ${Math.round(now - frames[index]!.since)} ms (stalled after ${stalled.stalledMs} ms) and is given up`,
        'frameStalled',
      );
      this.release(connections[index]!);
      this.options.gaveUp?.('frameStalled');
    }
    this.armStallCheck();
  }
}
