import type { AppId, ShuffleId } from '../../domain/index.ts';
import type { MessageOf } from '../../protocol/messages.ts';

export type FileGroupAnswer = MessageOf<'GetReducerFileGroupResponse'>;

/** A reduce task of the executor, by its node id. */
export type ReduceTaskId = string;

/**
 * What a reduce task about to start does for its file group:
 * - `cached`: read with the answer the executor holds (ReduceTaskConfig.cachedFileGroup), asking no one;
 * - `ask`: ask the lifecycle manager; the executor's later tasks of the shuffle wait for this ask;
 * - `wait`: another task of the executor is asking: do not start until the cache names this task among those
 *   released (`answered`, `left`, `forget`), then start as `lookup` says (cached, or ask).
 */
export type FileGroupClaim =
  | { readonly kind: 'cached'; readonly answer: FileGroupAnswer }
  | { readonly kind: 'ask' }
  | { readonly kind: 'wait' };

/** One shuffle's ask in flight: the task asking and the tasks waiting for it, oldest first. */
interface Flight {
  asker: ReduceTaskId;
  readonly waiters: ReduceTaskId[];
}

/**
 * The file groups one executor's shuffle client holds, by shuffle: a successful GetReducerFileGroup answer
 * of a shuffle is kept and handed to every later reduce task of that shuffle in the same executor
 * (ReduceTaskConfig.cachedFileGroup), which then reads without asking the lifecycle manager. The reference client
 * does the same (one ask per shuffle per executor, not per task), which is what keeps the lifecycle manager's load
 * proportional to executors rather than to reduce tasks.
 *
 * Single flight: the tasks that start while one task of the shuffle asks (the first wave of an executor's reducers)
 * do not ask too, each decoding its own copy of a large answer; they wait for that ask (`claim`). A SUCCESS answer
 * releases them all, to read from the cache. A task that stops asking without one (its asks unanswered or timed
 * out, the stage never ended, SHUFFLE_DATA_LOST, the read given up) hands the ask to the oldest waiter, which then
 * asks on its own (`left`): so no waiter is stranded, and at most one task per shuffle asks at a time.
 *
 * Only SUCCESS is kept: a committed shuffle's file group never changes, whereas STAGE_END_TIMEOUT means "ask again"
 * (the asking task does, for its waiters too) and SHUFFLE_DATA_LOST is answered by a stage rerun under a new shuffle
 * id. A shuffle is forgotten when it is unregistered (the engine is done with it): its answer and its ask, whose
 * waiters are released to ask on their own.
 */
export class FileGroupCache {
  private readonly groups = new Map<string, FileGroupAnswer>();
  private readonly flights = new Map<string, Flight>();

  /** A reduce task of the shuffle is about to start: read from the cache, ask, or wait for the ask in flight. */
  claim(appId: AppId, shuffleId: ShuffleId, task: ReduceTaskId): FileGroupClaim {
    const k = key(appId, shuffleId);
    const answer = this.groups.get(k);
    if (answer !== undefined) return { kind: 'cached', answer };
    const flight = this.flights.get(k);
    if (flight === undefined) {
      this.flights.set(k, { asker: task, waiters: [] });
      return { kind: 'ask' };
    }
    if (flight.asker !== task && !flight.waiters.includes(task)) flight.waiters.push(task);
    return flight.asker === task ? { kind: 'ask' } : { kind: 'wait' };
  }

  /**
   * A task of the shuffle was answered. A SUCCESS is kept and ends the shuffle's ask: its waiters are returned, to
   * start (they read from the cache). Any other answer changes nothing: the task asks again, or fails and `left`.
   */
  answered(appId: AppId, shuffleId: ShuffleId, answer: FileGroupAnswer): readonly ReduceTaskId[] {
    if (answer.status !== 'SUCCESS') return [];
    const k = key(appId, shuffleId);
    this.groups.set(k, answer);
    const flight = this.flights.get(k);
    this.flights.delete(k);
    return flight?.waiters ?? [];
  }

  /**
   * A task of the shuffle stops asking or waiting without a SUCCESS (it failed, or its read was given up). When it
   * was the asker, the oldest waiter becomes the asker and is returned, to start (it asks on its own).
   */
  left(appId: AppId, shuffleId: ShuffleId, task: ReduceTaskId): readonly ReduceTaskId[] {
    const k = key(appId, shuffleId);
    const flight = this.flights.get(k);
    if (flight === undefined) return [];
    if (flight.asker !== task) {
      const at = flight.waiters.indexOf(task);
      if (at >= 0) flight.waiters.splice(at, 1);
      return [];
    }
    const next = flight.waiters.shift();
    if (next === undefined) {
      this.flights.delete(k);
      return [];
    }
    flight.asker = next;
    return [next];
  }

  /** The answer kept for the shuffle, if any (a released task starts with it, or asks). */
  lookup(appId: AppId, shuffleId: ShuffleId): FileGroupAnswer | undefined {
    return this.groups.get(key(appId, shuffleId));
  }

  /** The shuffle is unregistered: its answer and its ask are forgotten; its waiters are returned, to start. */
  forget(appId: AppId, shuffleId: ShuffleId): readonly ReduceTaskId[] {
    const k = key(appId, shuffleId);
    this.groups.delete(k);
    const flight = this.flights.get(k);
    this.flights.delete(k);
    return flight?.waiters ?? [];
  }

  /** The task asking for the shuffle, if any. */
  askerOf(appId: AppId, shuffleId: ShuffleId): ReduceTaskId | undefined {
    return this.flights.get(key(appId, shuffleId))?.asker;
  }

  /** Shuffles whose answer is kept. */
  get size(): number {
    return this.groups.size;
  }
}

function key(appId: AppId, shuffleId: ShuffleId): string {
  return `${appId}/${shuffleId}`;
}
