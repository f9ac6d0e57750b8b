import type { PlantedBug } from '../planted-bugs.ts';

/**
 * The worker's back-pressure as a decision: which of its data ports it reads, from the bytes it holds. Pure; the
 * runtime (runtime/driver/back-pressure.ts) counts the bytes and applies the decision to its sockets.
 */

/** Thresholds in bytes of the worker's memory budget (`svc.worker.memory.size` × the directMemoryRatio* keys). */
export interface BackPressureLimits {
  readonly pauseReceiveBytes: number;
  readonly pauseReplicateBytes: number;
  readonly resumeBytes: number;
  /**
   * Partly received frames above this pause both data ports (each connection at the end of its frame under way)
   * until they are at or below it again (`partialFramePauseBytes`): new frames wait in their senders' sockets while
   * those under way arrive, instead of being given up past the limit. Absent: frames never pause on their own.
   */
  readonly partialFramePauseBytes?: number;
  /** Only the simulator's proof tests set it (core/planted-bugs.ts). */
  readonly plantedBug?: PlantedBug;
}

/** The shares of the memory budget the thresholds sit at (the `svc.worker.directMemoryRatio*` keys). */
export interface MemoryRatios {
  readonly pauseReceive: number;
  readonly pauseReplicate: number;
  readonly resume: number;
}

/** A worker's thresholds from its memory budget: each ratio of it, rounded down to whole bytes. */
export function backPressureLimitsFor(budgetBytes: number, ratios: MemoryRatios): BackPressureLimits {
  const at = (ratio: number): number => Math.floor(budgetBytes * ratio);
  return {
    pauseReceiveBytes: at(ratios.pauseReceive),
    pauseReplicateBytes: at(ratios.pauseReplicate),
    resumeBytes: at(ratios.resume),
  };
}

/**
 * What partly received frames may hold together in a worker: the resume threshold, so that stalled ones never keep
 * it paused for long, but at least one whole frame (`frameMaxBytes`), so that any frame a peer may send can arrive.
 */
export function partialFrameLimitBytes(
  budgetBytes: number,
  resumeRatio: number,
  frameMaxBytes: number,
): number {
  return Math.max(Math.floor(budgetBytes * resumeRatio), frameMaxBytes);
}

/**
 * Where partly received frames pause the data ports: one whole frame (`frameMaxBytes`) below their limit, so that
 * the frame that takes them past it still fits under the limit. Frames under way are then never given up for
 * memory while they arrive; only frames that stall are (`stalledFramesToShed`). At the smallest limits (one frame)
 * it is 0: any frame under way holds the others back, one frame at a time.
 */
export function partialFramePauseBytes(limitBytes: number, frameMaxBytes: number): number {
  return Math.max(0, limitBytes - frameMaxBytes);
}

/**
 * How long a frame may be under way, while partly received frames keep the data ports paused, before it counts as
 * stalled and may be given up (`stalledFramesToShed`). A whole frame (128 MiB at most by default) crosses a network
 * of 1 Gbit/s in about a second; a peer that begins a frame and stops sending holds the others back this long at
 * most, not for the frame's deadline (svc.network.timeout).
 */
export const STALLED_FRAME_MS = 5_000;

/** What the worker holds: bytes handed to the disks and not yet written, and bytes of partly received frames. */
export interface HeldBytes {
  readonly inFlightBytes: number;
  readonly partialFrameBytes: number;
}

/** Which data ports are paused (not read). */
export interface PausedPorts {
  readonly push: boolean;
  readonly replicate: boolean;
}

/**
 * Pushes pause at `pauseReceiveBytes`, replication too at `pauseReplicateBytes`, both resume at or below
 * `resumeBytes`; in between nothing changes (hysteresis). What the disks have yet to write counts, and what peers
 * have begun to send up to `resumeBytes`: a frame that stalls half-way is one the worker keeps reading (a paused
 * connection stops only at the end of the frame under way), so had it counted in full, one stalled frame larger than
 * the pause threshold would keep every other connection paused until its deadline. Partly received frames above
 * `partialFramePauseBytes` pause both ports on their own: the frames under way arrive while new ones wait, and a
 * stalled one holds the others back for `STALLED_FRAME_MS` at most (`stalledFramesToShed`).
 */
export function backPressureDecision(
  limits: BackPressureLimits,
  held: HeldBytes,
  paused: PausedPorts,
): PausedPorts {
  // Partly received frames count in the total only up to the resume threshold (svc.network.frame.maxSize may exceed
  // svc.worker.memory.size × directMemoryRatioToPauseReceive, a budget below about 151m at the defaults).
  const total = held.inFlightBytes + Math.min(held.partialFrameBytes, limits.resumeBytes);
  const framesFull =
    limits.partialFramePauseBytes !== undefined && held.partialFrameBytes > limits.partialFramePauseBytes;
  if (framesFull || total >= limits.pauseReplicateBytes) return { push: true, replicate: true };
  if (total >= limits.pauseReceiveBytes) return { push: true, replicate: paused.replicate };
  if (total <= limits.resumeBytes && limits.plantedBug !== 'back-pressure-never-resumes') {
    return { push: false, replicate: false };
  }
  return paused;
}

export type DataPort = 'push' | 'replicate';

/** What one change of a worker's held bytes did to its data ports. */
export interface PortChange {
  /** The ports paused now, and which of them changed. */
  readonly paused: PausedPorts;
  readonly pausedNow: readonly DataPort[];
  readonly resumedNow: readonly DataPort[];
  /** Ports paused now that would not have been without the partly received frames (a hostile peer's mark). */
  readonly pausedByPartialFrames: readonly DataPort[];
}

/**
 * A worker's back-pressure as a count and a state, kept once for the runtime (runtime/driver/back-pressure.ts) and
 * the simulator (sim/world/back-pressure.ts): the bytes handed to the disks and not yet written, the bytes of frames
 * its connections have partly received, the ports paused, and `backPressureDecision` applied on every change.
 */
export class BackPressureGauge {
  private inFlight = 0;
  private partial = 0;
  private state: PausedPorts = { push: false, replicate: false };

  constructor(private readonly limits: BackPressureLimits) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  get partialFrameBytes(): number {
    return this.partial;
  }

  get paused(): PausedPorts {
    return this.state;
  }

  /** Bytes handed to the disks (positive) or written (negative). */
  change(delta: number): PortChange {
    this.inFlight += delta;
    return this.decide();
  }

  /** What the connections' partly received frames hold now, all together. */
  setPartialFrameBytes(bytes: number): PortChange {
    this.partial = bytes;
    return this.decide();
  }

  private decide(): PortChange {
    const before = this.state;
    const after = backPressureDecision(
      this.limits,
      { inFlightBytes: this.inFlight, partialFrameBytes: this.partial },
      before,
    );
    this.state = after;
    const pausedNow: DataPort[] = [];
    const resumedNow: DataPort[] = [];
    for (const port of ['push', 'replicate'] as const) {
      if (after[port] && !before[port]) pausedNow.push(port);
      if (!after[port] && before[port]) resumedNow.push(port);
    }
    if (pausedNow.length === 0) return { paused: after, pausedNow, resumedNow, pausedByPartialFrames: [] };
    const without = backPressureDecision(
      this.limits,
      { inFlightBytes: this.inFlight, partialFrameBytes: 0 },
      before,
    );
    return {
      paused: after,
      pausedNow,
      resumedNow,
      pausedByPartialFrames: this.partial === 0 ? [] : pausedNow.filter((port) => !without[port]),
    };
  }
}

/**
 * Which partly received frames to give up when together they would hold more than `limitBytes`: the largest
 * first, until the rest fit. Returns their indices in `heldBytes`. A peer that begins a huge frame and stalls thus
 * cannot keep others' small frames (pushes of a few KiB) out of the memory it may use: the largest holder goes, and
 * that is the one a hostile peer would make the largest.
 */
export function partialFramesToShed(heldBytes: readonly number[], limitBytes: number): number[] {
  let total = 0;
  for (const bytes of heldBytes) total += bytes;
  if (total <= limitBytes) return [];
  const order = heldBytes.map((_, index) => index).sort((a, b) => heldBytes[b]! - heldBytes[a]! || a - b);
  const shed: number[] = [];
  for (const index of order) {
    if (total <= limitBytes) break;
    shed.push(index);
    total -= heldBytes[index]!;
  }
  return shed;
}

/** A connection holding a partly received frame: its bytes, and when its frame began to hold them. */
export interface FrameUnderWay {
  readonly bytes: number;
  readonly since: number;
}

/**
 * Which stalled frames to give up while partly received frames hold more than `pauseBytes` (and so keep the data
 * ports paused): those under way since `now - stalledMs` or earlier, the largest first, until the rest are at or
 * below `pauseBytes`. Frames still arriving in time are left to arrive: a busy worker slows its senders, it does not
 * close their connections. Returns their indices in `frames`.
 */
export function stalledFramesToShed(
  frames: readonly FrameUnderWay[],
  now: number,
  pauseBytes: number,
  stalledMs: number,
): number[] {
  let total = 0;
  for (const frame of frames) total += frame.bytes;
  if (total <= pauseBytes) return [];
  const order = frames
    .map((_, index) => index)
    .filter((index) => now - frames[index]!.since >= stalledMs && frames[index]!.bytes > 0)
    .sort((a, b) => frames[b]!.bytes - frames[a]!.bytes || a - b);
  const shed: number[] = [];
  for (const index of order) {
    if (total <= pauseBytes) break;
    shed.push(index);
    total -= frames[index]!.bytes;
  }
  return shed;
}

/**
 * When to look for stalled frames next: while partly received frames (`totalBytes` in all) hold more than
 * `pauseBytes`, when the oldest of those under way since `sinces` turns stalled; otherwise never (undefined), and
 * `sinces` is not read.
 */
export function nextStallCheck(
  totalBytes: number,
  sinces: Iterable<number>,
  pauseBytes: number,
  stalledMs: number,
): number | undefined {
  if (totalBytes <= pauseBytes) return undefined;
  let earliest: number | undefined;
  for (const since of sinces) if (earliest === undefined || since < earliest) earliest = since;
  return earliest === undefined ? undefined : earliest + stalledMs;
}

/**
 * Whether a driver's backlog (inputs received and not yet acted on, runtime/driver/node-driver.ts) holds back its
 * peers: from `limit` on, until it fell to half of it (hysteresis, so that reading does not flap at the bound).
 * Inputs past the bound are still taken (a completion or a reply dropped would wedge the machine); only reading
 * from the peers stops.
 */
export function backlogFull(backlog: number, limit: number, full: boolean): boolean {
  return full ? backlog > limit / 2 : backlog >= limit;
}
