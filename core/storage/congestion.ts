/**
 * The worker's congestion control as decisions (`svc.worker.congestionControl.*`; reference CongestionController).
 * Pure: the worker machine hands in the bytes it accepted and wrote, with the time, and the bytes its disks still
 * have to write; out come whether a user's pushes are answered *_CONGESTED, and the start and end of each episode.
 *
 * - A worker-wide trigger is over while the disk buffer (bytes accepted and not yet written) or the worker's produce
 *   speed passed its high watermark, until it falls below its low one (hysteresis). While one is over, the users
 *   that produce faster than their share of what the disks consume (consume speed / active users), and always the
 *   heaviest one, are congested: the heaviest users slow down first.
 * - A user whose own produce speed passed the user high watermark is congested until it falls below the low one,
 *   whatever the worker's load.
 * - An episode lasts while anything is over: its start and its end are events, one log line each.
 *
 * The worker sees applications, not users (its messages carry no user identity): each application counts as one
 * user. Speeds are bytes per second over the last `sampleWindowMs`, kept in ten buckets.
 */

/** A low and a high watermark; `Infinity` is unlimited (the default: never over). */
export interface Watermarks {
  readonly low: number;
  readonly high: number;
}

export interface CongestionConfig {
  /** `svc.worker.congestionControl.diskBuffer.{low,high}.watermark`: bytes accepted and not yet written. */
  readonly diskBuffer: Watermarks;
  /** `svc.worker.congestionControl.userProduceSpeed.{low,high}.watermark`: bytes per second of one user. */
  readonly userProduceSpeed: Watermarks;
  /** `svc.worker.congestionControl.workerProduceSpeed.{low,high}.watermark`: bytes per second in all. */
  readonly workerProduceSpeed: Watermarks;
  /** The window speeds are measured over (reference: 10 s). */
  readonly sampleWindowMs: number;
  /** How often the worker looks at its buffer and speeds while data flows or an episode lasts. */
  readonly checkIntervalMs: number;
}

/**
 * The watermarks alone: what the dynamic configuration may change without a restart (the window and the check
 * interval stay as the worker started).
 */
export type CongestionWatermarks = Pick<
  CongestionConfig,
  'diskBuffer' | 'userProduceSpeed' | 'workerProduceSpeed'
>;

/** Bytes counted per bucket of time, oldest first; only buckets inside the sample window are kept. */
export type Meter = readonly { readonly at: number; readonly bytes: number }[];

export type WorkerTrigger = 'diskBuffer' | 'workerProduceSpeed';

/** What the last check measured (the worker's gauges show it). */
export interface CongestionMeasure {
  readonly bufferedBytes: number;
  /** Bytes per second pushed to the worker, all users. */
  readonly workerProduceSpeed: number;
  /** Bytes per second the worker's disks wrote. */
  readonly consumeSpeed: number;
  /** Bytes per second of each active user. */
  readonly userProduceSpeed: ReadonlyMap<string, number>;
}

export interface CongestionEpisode {
  readonly since: number;
  /** What started it, in words. */
  readonly cause: string;
  /** Users answered *_CONGESTED during the episode. */
  readonly users: ReadonlySet<string>;
  /** Batches answered *_CONGESTED during the episode. */
  readonly congestedReplies: number;
  readonly peakBufferedBytes: number;
}

export interface CongestionState {
  /** Bytes produced by each user (application) in the window; a user without bytes in it is inactive. */
  readonly produced: ReadonlyMap<string, Meter>;
  readonly consumed: Meter;
  /** Worker-wide triggers past their high watermark and not yet below their low one. */
  readonly over: ReadonlySet<WorkerTrigger>;
  /** Users past the user high watermark and not yet below the low one. */
  readonly heavyUsers: ReadonlySet<string>;
  readonly episode: CongestionEpisode | undefined;
  readonly measure: CongestionMeasure;
}

export type CongestionEvent =
  | {
      readonly kind: 'episodeStarted';
      readonly at: number;
      readonly cause: string;
      /** Users congested from the start, heaviest first. */
      readonly users: readonly string[];
    }
  | {
      readonly kind: 'episodeEnded';
      readonly at: number;
      readonly since: number;
      readonly congestedReplies: number;
      readonly users: readonly string[];
      readonly peakBufferedBytes: number;
    };

const BUCKETS_PER_WINDOW = 10;

export function emptyCongestion(): CongestionState {
  return {
    produced: new Map(),
    consumed: [],
    over: new Set(),
    heavyUsers: new Set(),
    episode: undefined,
    measure: { bufferedBytes: 0, workerProduceSpeed: 0, consumeSpeed: 0, userProduceSpeed: new Map() },
  };
}

function bucketWidth(config: CongestionConfig): number {
  return Math.max(1, Math.floor(config.sampleWindowMs / BUCKETS_PER_WINDOW));
}

/** The meter with `bytes` more at `now`, without the buckets that left the window. */
export function addToMeter(meter: Meter, config: CongestionConfig, now: number, bytes: number): Meter {
  const at = now - (now % bucketWidth(config));
  const kept = trimMeter(meter, config, now);
  const last = kept[kept.length - 1];
  if (last !== undefined && last.at === at) return [...kept.slice(0, -1), { at, bytes: last.bytes + bytes }];
  return [...kept, { at, bytes }];
}

function trimMeter(meter: Meter, config: CongestionConfig, now: number): Meter {
  const from = now - config.sampleWindowMs;
  let first = 0;
  while (first < meter.length && meter[first]!.at + bucketWidth(config) <= from) first += 1;
  return first === 0 ? meter : meter.slice(first);
}

/** Bytes per second over the window ending at `now`. */
export function meterSpeed(meter: Meter, config: CongestionConfig, now: number): number {
  let bytes = 0;
  for (const bucket of trimMeter(meter, config, now)) bytes += bucket.bytes;
  return (bytes * 1000) / config.sampleWindowMs;
}

/** A push of `bytes` by `user` was accepted. */
export function recordProduced(
  s: CongestionState,
  config: CongestionConfig,
  user: string,
  bytes: number,
  now: number,
): CongestionState {
  const produced = new Map(s.produced);
  produced.set(user, addToMeter(s.produced.get(user) ?? [], config, now, bytes));
  return { ...s, produced };
}

/** The disks wrote `bytes` of pushed data. */
export function recordConsumed(
  s: CongestionState,
  config: CongestionConfig,
  bytes: number,
  now: number,
): CongestionState {
  return { ...s, consumed: addToMeter(s.consumed, config, now, bytes) };
}

/** Whether a measure is past `high` (when not yet over) or still at or above `low` (when over). */
function stillOver(value: number, marks: Watermarks, wasOver: boolean): boolean {
  if (!wasOver) return value > marks.high;
  // A low watermark above the high one (or unset while the high one is set) would end every episode at once.
  return value >= Math.min(marks.low, marks.high);
}

/**
 * The periodic check: measures the buffer and the speeds, moves each trigger across its watermarks, forgets users
 * that produced nothing in the window, and starts or ends the episode.
 */
export function assessCongestion(
  s: CongestionState,
  config: CongestionConfig,
  now: number,
  bufferedBytes: number,
): { readonly state: CongestionState; readonly events: readonly CongestionEvent[] } {
  const produced = new Map<string, Meter>();
  const userProduceSpeed = new Map<string, number>();
  let workerProduceSpeed = 0;
  for (const [user, meter] of s.produced) {
    const kept = trimMeter(meter, config, now);
    if (kept.length === 0) continue;
    produced.set(user, kept);
    const speed = meterSpeed(kept, config, now);
    userProduceSpeed.set(user, speed);
    workerProduceSpeed += speed;
  }
  const consumed = trimMeter(s.consumed, config, now);
  const measure: CongestionMeasure = {
    bufferedBytes,
    workerProduceSpeed,
    consumeSpeed: meterSpeed(consumed, config, now),
    userProduceSpeed,
  };
  const over = new Set<WorkerTrigger>();
  if (stillOver(bufferedBytes, config.diskBuffer, s.over.has('diskBuffer'))) over.add('diskBuffer');
  if (stillOver(workerProduceSpeed, config.workerProduceSpeed, s.over.has('workerProduceSpeed')))
    over.add('workerProduceSpeed');
  const heavyUsers = new Set<string>();
  for (const [user, speed] of userProduceSpeed) {
    if (stillOver(speed, config.userProduceSpeed, s.heavyUsers.has(user))) heavyUsers.add(user);
  }
  let state: CongestionState = { produced, consumed, over, heavyUsers, episode: s.episode, measure };
  const events: CongestionEvent[] = [];
  const active = over.size > 0 || heavyUsers.size > 0;
  if (active && s.episode === undefined) {
    const cause = describeCause(config, measure, over, heavyUsers);
    const users = congestedUsers(state);
    state = {
      ...state,
      episode: { since: now, cause, users: new Set(), congestedReplies: 0, peakBufferedBytes: bufferedBytes },
    };
    events.push({ kind: 'episodeStarted', at: now, cause, users });
  } else if (!active && s.episode !== undefined) {
    const episode = s.episode;
    state = { ...state, episode: undefined };
    events.push({
      kind: 'episodeEnded',
      at: now,
      since: episode.since,
      congestedReplies: episode.congestedReplies,
      users: [...episode.users].sort(),
      peakBufferedBytes: Math.max(episode.peakBufferedBytes, bufferedBytes),
    });
  } else if (s.episode !== undefined && bufferedBytes > s.episode.peakBufferedBytes) {
    state = { ...state, episode: { ...s.episode, peakBufferedBytes: bufferedBytes } };
  }
  return { state, events };
}

function describeCause(
  config: CongestionConfig,
  measure: CongestionMeasure,
  over: ReadonlySet<WorkerTrigger>,
  heavyUsers: ReadonlySet<string>,
): string {
  const parts: string[] = [];
  if (over.has('diskBuffer'))
    parts.push(`disk buffer ${measure.bufferedBytes} B > high watermark ${config.diskBuffer.high} B`);
  if (over.has('workerProduceSpeed'))
    parts.push(
      `worker produce speed ${Math.round(measure.workerProduceSpeed)} B/s > high watermark ` +
        `${config.workerProduceSpeed.high} B/s`,
    );
  for (const user of heavyUsers)
    parts.push(
      `user ${user} produce speed ${Math.round(measure.userProduceSpeed.get(user) ?? 0)} B/s > high watermark ` +
        `${config.userProduceSpeed.high} B/s`,
    );
  return parts.join('; ');
}

/**
 * Whether `user`'s pushes are answered *_CONGESTED, as of the last check: a heavy user always; while a worker-wide
 * trigger is over, a user producing faster than its share of the consume speed, and the heaviest user.
 */
export function isUserCongested(s: CongestionState, user: string): boolean {
  if (s.heavyUsers.has(user)) return true;
  if (s.over.size === 0) return false;
  const speeds = s.measure.userProduceSpeed;
  const speed = speeds.get(user);
  if (speed === undefined || speed <= 0) return false;
  const share = s.measure.consumeSpeed / Math.max(1, speeds.size);
  if (speed > share) return true;
  for (const other of speeds.values()) if (other > speed) return false;
  return true;
}

/** The users congested as of the last check, heaviest first. */
export function congestedUsers(s: CongestionState): string[] {
  return [...s.measure.userProduceSpeed]
    .filter(([user]) => isUserCongested(s, user))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([user]) => user);
}

/** A batch of `user` was answered *_CONGESTED: the episode's summary counts it. */
export function noteCongestedReply(s: CongestionState, user: string): CongestionState {
  const episode = s.episode;
  if (episode === undefined) return s;
  const users = episode.users.has(user) ? episode.users : new Set(episode.users).add(user);
  return { ...s, episode: { ...episode, users, congestedReplies: episode.congestedReplies + 1 } };
}

/** The worker counts as highly loaded (its heartbeat says so) while a worker-wide trigger is over. */
export function isWorkerCongested(s: CongestionState): boolean {
  return s.over.size > 0;
}

/** Whether the checks must go on: data was produced in the window, or an episode lasts. */
export function needsCongestionCheck(s: CongestionState): boolean {
  return s.produced.size > 0 || s.episode !== undefined || s.consumed.length > 0;
}
