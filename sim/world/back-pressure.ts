import {
  BackPressureGauge,
  nextStallCheck,
  partialFramesToShed,
  stalledFramesToShed,
  type BackPressureLimits,
} from '../../core/storage/back-pressure.ts';

export type PausedService = 'push' | 'replicate';

/** What partly received frames may hold in a simulated worker (conf/machine-configs.ts, `workerMemoryLimitsFrom`). */
export interface PartialFrameLimit {
  readonly limitBytes: number;
  /** How long a frame is under way before it counts as stalled; default `STALLED_FRAME_MS` (core). */
  readonly stalledMs?: number;
}

/** A data message on its way into the worker, counted as a partly received frame until it arrives. */
export interface PartialFrame<T> {
  readonly id: number;
  /** The connection it travels on (sender and port): the holder the runtime closes to give memory back. */
  readonly link: string;
  readonly bytes: number;
  /** What the world needs to tell the sender if the frame is given up. */
  readonly detail: T;
}

/** What a change of the counts did to the ports. */
export interface PressureChange {
  /** Some port resumed: the arrivals held on it may be read. */
  readonly resumed: boolean;
  /** Ports paused now that would not have been without the partly received frames. */
  readonly pausedByPartialFrames: readonly PausedService[];
}

const UNCHANGED: PressureChange = { resumed: false, pausedByPartialFrames: [] };

/** One connection into the worker (a sender's link to one port): its frames in flight, in the order sent. */
interface Link<T> {
  readonly frames: PartialFrame<T>[];
  /** What its frame under way holds: the first frame's bytes, or 0 when its port was paused as it began. */
  held: number;
  /** When the frame under way began to hold its bytes (its age decides whether it stalled). */
  since: number;
}

/**
 * A simulated worker's back-pressure: the core's gauge (`BackPressureGauge`, which a runtime worker runs too) of the
 * bytes it handed to its disks and that are not yet written and the bytes of frames its connections are receiving,
 * the frames themselves as the simulated network carries them, and the core's decisions (core/storage/back-pressure.ts) of which data ports
 * it reads and which connections it closes when partly received frames hold more than their limit. The world holds
 * the arrivals of a paused port, in order, until it resumes, as a runtime worker stops reading the socket at a
 * frame's end.
 *
 * A connection receives one frame at a time: the first data message in flight on a link is under way from when it
 * is sent (or when the one before it arrived) until it arrives, and holds its bytes (the network has no first-byte
 * time: bytes may come from the start); the messages behind it wait in the sender's socket. A frame that comes under
 * way while its port is paused holds nothing, as a paused runtime connection reads nothing.
 */
export class WorkerBackPressure<T = unknown> {
  /** The count and the ports' state, the same code as a runtime worker's (core/storage/back-pressure.ts). */
  private readonly gauge: BackPressureGauge;
  /** What the links' frames under way hold, all together (the gauge's partly received bytes). */
  private partial = 0;
  private readonly links = new Map<string, Link<T>>();
  /** Where each frame in flight travels. */
  private readonly linkOf = new Map<number, string>();
  /** Frames given up: their arrivals (and duplicates') are dropped. */
  private readonly shed = new Set<number>();

  constructor(
    private readonly limits: BackPressureLimits,
    private readonly partialFrames?: PartialFrameLimit,
  ) {
    this.gauge = new BackPressureGauge(limits);
  }

  get bytesInFlight(): number {
    return this.gauge.bytesInFlight;
  }

  get partialFrameBytes(): number {
    return this.partial;
  }

  /** Whether partly received frames are modelled (the node has a limit for them). */
  get countsPartialFrames(): boolean {
    return this.partialFrames !== undefined;
  }

  isPaused(service: PausedService): boolean {
    return this.gauge.paused[service];
  }

  /** Bytes handed to the disks (positive) or written (negative); returns whether some port resumed. */
  change(delta: number): boolean {
    return this.gauge.change(delta).resumedNow.length > 0;
  }

  /**
   * A data message is sent to the worker on `service`'s port. When it is the frame under way on its link and the
   * total passes the limit, the core picks the connections holding the most: every frame in flight on them is given
   * up (returned, for the world to lose them and tell their senders) and counted free at once.
   */
  frameSent(
    frame: PartialFrame<T>,
    service: PausedService,
    now: number,
  ): { readonly change: PressureChange; readonly shed: PartialFrame<T>[] } {
    let link = this.links.get(frame.link);
    if (link === undefined) {
      link = { frames: [], held: 0, since: now };
      this.links.set(frame.link, link);
    }
    link.frames.push(frame);
    this.linkOf.set(frame.id, frame.link);
    if (link.frames.length > 1) return { change: UNCHANGED, shed: [] };
    return this.underWay(link, service, now);
  }

  /**
   * A frame's last byte arrived: 'shed' when it was given up (the arrival is lost), else what the count did (the
   * next frame on its link comes under way, and may be larger).
   */
  frameArrived(
    id: number,
    service: PausedService,
    now: number,
  ): 'shed' | { readonly change: PressureChange; readonly shed: PartialFrame<T>[] } {
    if (this.shed.has(id)) return 'shed';
    const name = this.linkOf.get(id);
    // A duplicate's second arrival: counted with the first.
    if (name === undefined) return { change: UNCHANGED, shed: [] };
    this.linkOf.delete(id);
    const link = this.links.get(name)!;
    const index = link.frames.findIndex((frame) => frame.id === id);
    link.frames.splice(index, 1);
    // A message that overtook the frame under way (a reordering network) held nothing of its own.
    if (index > 0) return { change: UNCHANGED, shed: [] };
    this.partial -= link.held;
    link.held = 0;
    const arrived = this.decide();
    if (link.frames.length === 0) {
      this.links.delete(name);
      return { change: arrived, shed: [] };
    }
    const next = this.underWay(link, service, now);
    return {
      change: {
        resumed: arrived.resumed || next.change.resumed,
        pausedByPartialFrames: next.change.pausedByPartialFrames,
      },
      shed: next.shed,
    };
  }

  /** The link's first frame is under way: it holds its bytes if its port is read, and past the limit some go. */
  private underWay(
    link: Link<T>,
    service: PausedService,
    now: number,
  ): { readonly change: PressureChange; readonly shed: PartialFrame<T>[] } {
    if (this.gauge.paused[service]) return { change: this.decide(), shed: [] };
    link.held = link.frames[0]!.bytes;
    link.since = now;
    this.partial += link.held;
    const grown = this.decide();
    const limit = this.partialFrames?.limitBytes;
    if (limit === undefined || this.partial <= limit) return { change: grown, shed: [] };
    const names = [...this.links.keys()];
    const shed = this.close(
      names,
      partialFramesToShed(
        names.map((name) => this.links.get(name)!.held),
        limit,
      ),
    );
    const after = this.decide();
    return {
      change: {
        resumed: after.resumed,
        // Counted even when giving frames up resumed them at once: the runtime pauses, then resumes.
        pausedByPartialFrames: grown.pausedByPartialFrames,
      },
      shed,
    };
  }

  /**
   * While partly received frames keep the ports paused (above `partialFramePauseBytes`), gives up the frames under
   * way for `stalledMs` or longer, the largest first, until the rest are at or below it (the core's
   * `stalledFramesToShed`, as a runtime worker's check does).
   */
  shedStalled(
    now: number,
    stalledMs: number,
  ): { readonly change: PressureChange; readonly shed: PartialFrame<T>[] } {
    const pauseBytes = this.limits.partialFramePauseBytes;
    if (pauseBytes === undefined) return { change: UNCHANGED, shed: [] };
    const names = [...this.links.keys()];
    const frames = names.map((name) => {
      const link = this.links.get(name)!;
      return { bytes: link.held, since: link.since };
    });
    const shed = this.close(names, stalledFramesToShed(frames, now, pauseBytes, stalledMs));
    return { change: shed.length === 0 ? UNCHANGED : this.decide(), shed };
  }

  /** When the next frame under way becomes stalled, while frames keep the ports paused; else undefined. */
  nextStallCheck(stalledMs: number): number | undefined {
    const pauseBytes = this.limits.partialFramePauseBytes;
    if (pauseBytes === undefined) return undefined;
    const sinces: number[] = [];
    for (const link of this.links.values()) if (link.held > 0) sinces.push(link.since);
    return nextStallCheck(this.partial, sinces, pauseBytes, stalledMs);
  }

  /** Closes the links at `indices` of `names`: every frame in flight on them is given up and counted free at once. */
  private close(names: readonly string[], indices: readonly number[]): PartialFrame<T>[] {
    const shed: PartialFrame<T>[] = [];
    for (const index of indices) {
      const closed = this.links.get(names[index]!)!;
      this.links.delete(names[index]!);
      this.partial -= closed.held;
      for (const frame of closed.frames) {
        shed.push(frame);
        this.shed.add(frame.id);
        this.linkOf.delete(frame.id);
      }
    }
    return shed;
  }

  private decide(): PressureChange {
    const change = this.gauge.setPartialFrameBytes(this.partial);
    const resumed = change.resumedNow.length > 0;
    if (!resumed && change.pausedByPartialFrames.length === 0) return UNCHANGED;
    return { resumed, pausedByPartialFrames: change.pausedByPartialFrames };
  }
}
