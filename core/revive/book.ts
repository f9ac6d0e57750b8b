import type { PartitionLocation, StatusCode } from '../domain/index.ts';
import type { PlantedBug } from '../planted-bugs.ts';

/**
 * The lifecycle manager's book of revives for one shuffle: the latest location of each partition and the revives
 * under way. Concurrent revives of one partition (every map task pushing to a failed worker asks at once) collapse
 * into one: a pending revive absorbs later requests, and all of them get the same new location. A request about an
 * epoch older than the latest known location is answered with that location at once, with no new revive.
 * `W` is whatever the caller needs to answer a request (for example the envelope it came in); the book only keeps it.
 */
export interface ReviveBook<W> {
  /** The latest primary location of each partition (carrying its peer when replicated). */
  readonly latest: ReadonlyMap<number, PartitionLocation>;
  readonly pending: ReadonlyMap<number, PendingRevive<W>>;
  /**
   * The highest epoch handed out for each partition, whether or not its reservation succeeded: a reservation that
   * timed out may still have created the files on its workers (only the answer was lost), so an epoch once handed out
   * is never handed out again. Reusing it made every later revive of the partition fail on the workers' existing
   * files, and the client exclude them, for good (swarm seed 13399).
   */
  readonly spent: ReadonlyMap<number, number>;
}

export interface ReviveRequest<W> {
  readonly partitionId: number;
  /** The epoch of the location the client saw fail; -1 when it knows no location for the partition. */
  readonly epoch: number;
  readonly cause: StatusCode;
  readonly waiter: W;
}

export interface PendingRevive<W> {
  readonly partitionId: number;
  /** The highest failed epoch among the absorbed requests. */
  readonly epoch: number;
  /** The cause of the request with that epoch (the first one on ties). */
  readonly cause: StatusCode;
  readonly waiters: readonly W[];
  /** Taken by `startRevives`; requests arriving now still join and get the same answer. */
  readonly inFlight: boolean;
}

/** One partition to revive now: allocate a location with `newEpoch`, then reserve it. */
export interface StartedRevive {
  readonly partitionId: number;
  readonly cause: StatusCode;
  readonly oldEpoch: number;
  readonly newEpoch: number;
  /** The latest known location: the one whose workers a failure cause may exclude. */
  readonly oldLocation?: PartitionLocation;
}

export type ReviveResult =
  | { readonly partitionId: number; readonly location: PartitionLocation }
  | { readonly partitionId: number; readonly status: StatusCode; readonly reason: string };

export interface ReviveAnswer<W> {
  readonly waiter: W;
  readonly partitionId: number;
  readonly status: StatusCode;
  readonly location?: PartitionLocation;
  readonly reason?: string;
}

export function emptyReviveBook<W>(): ReviveBook<W> {
  return { latest: new Map(), pending: new Map(), spent: new Map() };
}

/** Records locations the shuffle was given (the slot offer, or revives done elsewhere); keeps the newest epoch. */
export function recordLocations<W>(
  book: ReviveBook<W>,
  primaries: readonly PartitionLocation[],
): ReviveBook<W> {
  const latest = new Map(book.latest);
  for (const location of primaries) {
    const known = latest.get(location.partitionId);
    if (known === undefined || location.epoch > known.epoch) latest.set(location.partitionId, location);
  }
  return { ...book, latest };
}

/**
 * Takes revive requests in. A request joins the pending revive of its partition if there is one; otherwise a
 * request about an older epoch than the latest location is answered SUCCESS with that location; otherwise it opens
 * a pending revive. Pending revives come first, because the latest location may be the very one being replaced.
 */
export function submitRevives<W>(
  book: ReviveBook<W>,
  requests: readonly ReviveRequest<W>[],
): { book: ReviveBook<W>; answers: readonly ReviveAnswer<W>[] } {
  const pending = new Map(book.pending);
  const answers: ReviveAnswer<W>[] = [];
  for (const request of requests) {
    const { partitionId, waiter } = request;
    const open = pending.get(partitionId);
    if (open !== undefined) {
      const newer = request.epoch > open.epoch;
      pending.set(partitionId, {
        ...open,
        epoch: newer ? request.epoch : open.epoch,
        cause: newer ? request.cause : open.cause,
        waiters: [...open.waiters, waiter],
      });
      continue;
    }
    const latest = book.latest.get(partitionId);
    if (latest !== undefined && latest.epoch > request.epoch) {
      answers.push({ waiter, partitionId, status: 'SUCCESS', location: latest });
      continue;
    }
    pending.set(partitionId, {
      partitionId,
      epoch: request.epoch,
      cause: request.cause,
      waiters: [waiter],
      inFlight: false,
    });
  }
  return { book: { ...book, pending }, answers };
}

/**
 * Takes every pending revive that is not yet in flight, in the order they were opened, and gives each its new
 * epoch: one more than any epoch known or ever handed out for the partition, so epochs only grow and none is used
 * twice. 'epoch-not-increased' reuses the old epoch instead (simulator proof only).
 */
export function startRevives<W>(
  book: ReviveBook<W>,
  options: { readonly plantedBug?: PlantedBug } = {},
): { book: ReviveBook<W>; started: readonly StartedRevive[] } {
  const pending = new Map(book.pending);
  const spent = new Map(book.spent);
  const started: StartedRevive[] = [];
  for (const revive of book.pending.values()) {
    if (revive.inFlight) continue;
    pending.set(revive.partitionId, { ...revive, inFlight: true });
    const oldLocation = book.latest.get(revive.partitionId);
    const oldEpoch = Math.max(revive.epoch, oldLocation?.epoch ?? -1);
    const newEpoch =
      options.plantedBug === 'epoch-not-increased'
        ? Math.max(oldEpoch, 0)
        : Math.max(oldEpoch, spent.get(revive.partitionId) ?? -1) + 1;
    spent.set(revive.partitionId, newEpoch);
    started.push({
      partitionId: revive.partitionId,
      cause: revive.cause,
      oldEpoch,
      newEpoch,
      ...(oldLocation === undefined ? {} : { oldLocation }),
    });
  }
  return { book: { ...book, pending, spent }, started };
}

/**
 * Ends in-flight revives: a new location becomes the latest and answers every waiter SUCCESS; a failure answers
 * every waiter with its status and reason and leaves the latest location as it was. A result for a partition with
 * no revive in flight is a caller bug and throws.
 */
export function finishRevives<W>(
  book: ReviveBook<W>,
  results: readonly ReviveResult[],
): { book: ReviveBook<W>; answers: readonly ReviveAnswer<W>[] } {
  const pending = new Map(book.pending);
  const latest = new Map(book.latest);
  const answers: ReviveAnswer<W>[] = [];
  for (const result of results) {
    const revive = pending.get(result.partitionId);
    if (revive === undefined || !revive.inFlight) {
      throw new RangeError(
        `revive result for partition ${result.partitionId}, which has no revive in flight; ` +
          'finish only revives taken by startRevives, each once',
      );
    }
    pending.delete(result.partitionId);
    if ('location' in result) {
      if (result.location.partitionId !== result.partitionId) {
        throw new RangeError(
          `revive result for partition ${result.partitionId} carries a location of partition ${result.location.partitionId}`,
        );
      }
      latest.set(result.partitionId, result.location);
      for (const waiter of revive.waiters) {
        answers.push({
          waiter,
          partitionId: result.partitionId,
          status: 'SUCCESS',
          location: result.location,
        });
      }
    } else {
      for (const waiter of revive.waiters) {
        answers.push({
          waiter,
          partitionId: result.partitionId,
          status: result.status,
          reason: result.reason,
        });
      }
    }
  }
  return { book: { latest, pending, spent: book.spent }, answers };
}
