// What a follower of a master group shows on its management API's reads: the group's state as the leader last
// persisted it in etcd, read as one range of the state prefix at one revision and decoded by the core code a newly
// elected leader restores from (core/ha/key-layout.ts `assembleDurable`). A read is reused for `maxAgeMs` (1 s), and
// requests that arrive while one is under way share it, so that etcd sees at most one range a second per follower
// however many clients poll, and nothing at all while nobody reads. A watch of the prefix would keep a copy current
// instead, but it costs a stream per follower for a page operators seldom open, needs its own resynchronisation
// after a compaction or an etcd outage, and would serve a stale copy without knowing it while the stream is broken;
// a range read either has the revision it was read at, or fails and says why.
import { assembleDurable } from '../../core/ha/key-layout.ts';
import type { MasterState } from '../../core/machines/master/index.ts';

/** Every key under the state prefix, as etcd returned them at one revision. */
export interface StoredRange {
  readonly values: readonly { readonly key: string; readonly value: string }[];
  readonly revision: number;
}

/** The group's state as stored, and the etcd revision it was read at. */
export interface StoredMasterState {
  readonly state: MasterState;
  readonly revision: number;
}

/** The stored state could not be read (etcd unreachable, no quorum) or decoded; the message says which. */
export class StoredStateUnavailable extends Error {
  override readonly name = 'StoredStateUnavailable';
}

/**
 * The keys of a range as a master state: the stored durable part (workers, applications and their shuffles, the
 * estimated partition size) in `initial`, the rest of a master's state (rebuilt from heartbeats on a leader) as a
 * master starts with it. Throws naming the first key that is wrong, as a leader's restore does.
 */
export function storedMasterState(prefix: string, range: StoredRange, initial: MasterState): MasterState {
  return { ...initial, durable: assembleDurable(prefix, range.values, initial.durable) };
}

export interface StoredStateReaderOptions {
  /** One range read of the state prefix (runtime/ha/etcd-store.ts `list`). */
  readonly list: () => Promise<StoredRange>;
  readonly prefix: string;
  /** The master's initial state, for its configuration and the parts etcd does not hold. */
  readonly initial: MasterState;
  /** How long a read answers later requests. */
  readonly maxAgeMs: number;
  /** A monotonic clock, in ms. */
  readonly clock: () => number;
}

export class StoredStateReader {
  private last: { readonly read: StoredMasterState; readonly at: number } | undefined;
  private pending: Promise<StoredMasterState> | undefined;

  constructor(private readonly options: StoredStateReaderOptions) {}

  /** The stored state, read at most `maxAgeMs` ago; rejects with StoredStateUnavailable. */
  read(): Promise<StoredMasterState> {
    const { last } = this;
    if (last !== undefined && this.options.clock() - last.at < this.options.maxAgeMs) {
      return Promise.resolve(last.read);
    }
    this.pending ??= this.readNow().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async readNow(): Promise<StoredMasterState> {
    const { list, prefix, initial, clock } = this.options;
    const startedAt = clock();
    let range: StoredRange;
    try {
      range = await list();
    } catch (error) {
      throw new StoredStateUnavailable(
        `cannot read the group's state from etcd: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    let state: MasterState;
    try {
      state = storedMasterState(prefix, range, initial);
    } catch (error) {
      throw new StoredStateUnavailable(
        `the group's state in etcd at revision ${range.revision} cannot be read: ` +
          (error instanceof Error ? error.message : String(error)),
      );
    }
    const read = { state, revision: range.revision };
    // Counted from when the read began: an answer is never reused longer than maxAgeMs after etcd was asked.
    this.last = { read, at: startedAt };
    return read;
  }
}
