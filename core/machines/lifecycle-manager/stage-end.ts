import {
  uniqueId,
  workerKey,
  type PartitionLocation,
  type ShuffleId,
  type WorkerKey,
} from '../../domain/index.ts';
import type {
  CommittedFile,
  GetReducerFileGroupResponse,
  MapperEnd,
  MessageOf,
  PartitionWritten,
  ReducerFileGroup,
} from '../../protocol/messages.ts';
import { cancelTimer, count, log, reply, setTimer, type ReplyTo } from '../outbox.ts';
import { request, updateShuffle, type Draft } from './draft.ts';
import { endPendingRevives } from './revive.ts';
import {
  committedCopyKey,
  locationCopyKey,
  type CommitProgress,
  type CopyKey,
  type LmShuffle,
} from './state.ts';

/**
 * The end of a map stage: MapperEnd records the first attempt of each map to end as its winner; when every map has
 * ended, every worker holding a copy of the shuffle (primaries and replicas, all epochs) commits them with the
 * winning attempts; the committed files become the reducers' file groups. A location none of whose copies could
 * be committed makes the shuffle SHUFFLE_DATA_LOST: its content is unknown, so it is presumed to have held data.
 */

export function onMapperEnd(d: Draft, message: MapperEnd, replyTo: ReplyTo): void {
  const shuffle = d.shuffles.get(message.shuffleId);
  const status = (s: MessageOf<'StatusResponse'>['status'], text: string) =>
    reply(d.out, replyTo, { type: 'StatusResponse', status: s, message: text });
  const interrupted = d.interruptedShuffles.get(message.shuffleId);
  if (interrupted !== undefined) {
    status('QUOTA_EXCEEDED', interrupted);
    return;
  }
  if (
    shuffle === undefined ||
    shuffle.phase === 'awaiting-app' ||
    shuffle.phase === 'requesting-slots' ||
    shuffle.phase === 'reserving'
  ) {
    status(
      'SHUFFLE_UNREGISTERED',
      `shuffle ${message.shuffleId} is not registered with ${d.config.appId}'s lifecycle manager`,
    );
    return;
  }
  if (!Number.isInteger(message.mapId) || message.mapId < 0 || message.mapId >= shuffle.numMappers) {
    status(
      'REQUEST_FAILED',
      `map ${message.mapId} is outside shuffle ${message.shuffleId}'s ${shuffle.numMappers} maps`,
    );
    return;
  }
  const winner = shuffle.mapAttempts[message.mapId]!;
  if (winner === message.attemptId) {
    status('SUCCESS', ''); // a repeated MapperEnd (its first answer was lost)
    return;
  }
  if (winner !== -1) {
    status(
      'MAP_ENDED',
      `attempt ${winner} of map ${message.mapId} ended first; attempt ${message.attemptId}'s data is ignored by readers`,
    );
    return;
  }
  if (shuffle.phase !== 'ready') {
    status('STAGE_ENDED', `the map stage of shuffle ${message.shuffleId} has already ended`);
    return;
  }
  const mapAttempts = [...shuffle.mapAttempts];
  mapAttempts[message.mapId] = message.attemptId;
  const written = new Map(shuffle.written);
  written.set(message.mapId, message.written);
  const ended = updateShuffle(d, shuffle.shuffleId, {
    mapAttempts,
    written,
    endedMaps: shuffle.endedMaps + 1,
  });
  status('SUCCESS', '');
  if (ended.endedMaps === ended.numMappers) startCommit(d, ended);
}

function startCommit(d: Draft, shuffle: LmShuffle): void {
  updateShuffle(d, shuffle.shuffleId, { phase: 'committing' });
  endPendingRevives(d, shuffle.shuffleId);
  log(d.out, 'info', 'map stage ended; committing', {
    shuffleId: shuffle.shuffleId,
    copies: shuffle.reserved.length,
  });
  const byWorker = reservedByWorker(shuffle.reserved);
  const committing = updateShuffle(d, shuffle.shuffleId, {
    commit: {
      copiesByWorker: byWorker,
      awaiting: new Set(byWorker.keys()),
      committed: new Map(),
      failed: new Map(),
    },
  });
  for (const worker of byWorker.keys()) sendCommit(d, committing, worker, 1);
  if (byWorker.size === 0) finishCommit(d, shuffle.shuffleId);
}

function sendCommit(d: Draft, shuffle: LmShuffle, worker: WorkerKey, attempt: number): void {
  const copies = shuffle.commit?.copiesByWorker.get(worker) ?? [];
  request(
    d,
    worker,
    {
      type: 'CommitFiles',
      appId: d.config.appId,
      shuffleId: shuffle.shuffleId,
      primaryIds: copies.filter((c) => c.mode === 'PRIMARY').map(uniqueId),
      replicaIds: copies.filter((c) => c.mode === 'REPLICA').map(uniqueId),
      mapAttempts: shuffle.mapAttempts,
    },
    { kind: 'commit', shuffleId: shuffle.shuffleId, worker },
    attempt,
  );
}

export function onCommitUnanswered(
  d: Draft,
  shuffleId: ShuffleId,
  worker: WorkerKey,
  attempt: number,
  why: string,
): void {
  const shuffle = d.shuffles.get(shuffleId);
  if (shuffle?.commit === undefined || !shuffle.commit.awaiting.has(worker)) return;
  if (why === 'timeout' && attempt < d.config.maxRequestAttempts) {
    sendCommit(d, shuffle, worker, attempt + 1);
    return;
  }
  commitAnswered(d, shuffleId, worker, [], `CommitFiles to ${worker} failed: ${why} (${attempt} tries)`);
}

export function onCommitAnswer(
  d: Draft,
  shuffleId: ShuffleId,
  worker: WorkerKey,
  message: MessageOf<'CommitFilesResponse'> | MessageOf<'StatusResponse'>,
): void {
  if (message.type === 'StatusResponse') {
    commitAnswered(
      d,
      shuffleId,
      worker,
      [],
      `${worker} refused CommitFiles with ${message.status}: ${message.message}`,
    );
    return;
  }
  const committed = [...message.committedPrimaries, ...message.committedReplicas];
  commitAnswered(
    d,
    shuffleId,
    worker,
    committed,
    `${worker} could not commit it (${message.status}: ${message.message})`,
  );
}

/** Records a worker's commit outcome: `committed` files, and `reason` for every other copy it held. */
function commitAnswered(
  d: Draft,
  shuffleId: ShuffleId,
  worker: WorkerKey,
  committed: readonly CommittedFile[],
  reason: string,
): void {
  const shuffle = d.shuffles.get(shuffleId);
  const progress = shuffle?.commit;
  if (shuffle === undefined || progress === undefined || !progress.awaiting.has(worker)) return;
  // The progress is this machine's own (machine.ts: a step updates its state in place); copying its maps per answer
  // made a commit round quadratic in the copies.
  const awaiting = progress.awaiting as Set<WorkerKey>;
  const committedFiles = progress.committed as Map<CopyKey, CommittedFile>;
  const failed = progress.failed as Map<CopyKey, string>;
  awaiting.delete(worker);
  for (const file of committed) committedFiles.set(committedCopyKey(file), file);
  for (const copy of progress.copiesByWorker.get(worker) ?? []) {
    const key = locationCopyKey(copy);
    if (!committedFiles.has(key)) {
      failed.set(key, reason);
      count(d.out, 'CommitFilesFailCount');
    }
  }
  if (awaiting.size === 0) finishCommit(d, shuffleId);
}

function finishCommit(d: Draft, shuffleId: ShuffleId): void {
  const shuffle = d.shuffles.get(shuffleId)!;
  const progress: CommitProgress = shuffle.commit ?? {
    copiesByWorker: new Map(),
    awaiting: new Set(),
    committed: new Map(),
    failed: new Map(),
  };
  // One group per partition, made at its size: grown by pushes, 10,000 groups copied their list a dozen times.
  const groups = new Array<ReducerFileGroup>(shuffle.numPartitions);
  const lost: string[] = [];
  const copies = copiesByPartition(shuffle.reserved, shuffle.numPartitions);
  const expected = expectedByPartition(shuffle);
  for (let partitionId = 0; partitionId < shuffle.numPartitions; partitionId += 1) {
    const from = copies.starts[partitionId]!;
    const to = copies.starts[partitionId + 1]!;
    const written = expected[partitionId]!;
    if (to - from === 1) {
      // Most partitions have one copy of one epoch: no epoch list, set or sort for them (10,000 partitions a commit).
      const copy = copies.ordered[from]!;
      const file = progress.committed.get(locationCopyKey(copy));
      if (file === undefined) lost.push(lostEpoch(progress, partitionId, copy.epoch, [copy]));
      groups[partitionId] =
        file === undefined
          ? { partitionId, locations: [], files: [], expected: written }
          : { partitionId, locations: [copy], files: [file], expected: written };
      continue;
    }
    const locations: PartitionLocation[] = [];
    const files: CommittedFile[] = [];
    const ofPartition = copies.ordered.slice(from, to);
    for (const epoch of [...new Set(ofPartition.map((c) => c.epoch))].sort((a, b) => a - b)) {
      const ofEpoch = ofPartition.filter((c) => c.epoch === epoch);
      let committed = 0;
      for (const copy of ofEpoch) {
        const file = progress.committed.get(locationCopyKey(copy));
        if (file === undefined) continue;
        locations.push(copy);
        files.push(file);
        committed += 1;
      }
      if (committed === 0) lost.push(lostEpoch(progress, partitionId, epoch, ofEpoch));
    }
    groups[partitionId] = { partitionId, locations, files, expected: written };
  }
  let primaryBytes = 0;
  let primaryFiles = 0;
  for (const file of progress.committed.values()) {
    if (file.mode !== 'PRIMARY') continue;
    primaryBytes += file.bytes;
    primaryFiles += 1;
  }
  d.unreported = {
    bytes: d.unreported.bytes + primaryBytes,
    files: d.unreported.files + primaryFiles,
  };
  const fileGroup: GetReducerFileGroupResponse =
    lost.length === 0
      ? {
          type: 'GetReducerFileGroupResponse',
          status: 'SUCCESS',
          fileGroups: groups,
          mapAttempts: shuffle.mapAttempts,
          message: '',
        }
      : {
          type: 'GetReducerFileGroupResponse',
          status: 'SHUFFLE_DATA_LOST',
          fileGroups: [],
          mapAttempts: shuffle.mapAttempts,
          message: `no copy of ${lost.length} location(s) could be committed: ${lost.join('; ')}`,
        };
  if (lost.length > 0) {
    log(d.out, 'error', 'shuffle data lost', { shuffleId, message: fileGroup.message });
    count(d.out, 'ShuffleDataLostCount');
  } else {
    log(d.out, 'info', 'shuffle committed', { shuffleId, files: progress.committed.size });
  }
  updateShuffle(d, shuffleId, { phase: lost.length === 0 ? 'committed' : 'data-lost', fileGroup });
  for (const [parkId, parked] of [...d.parkedFileGroups]) {
    if (parked.shuffleId !== shuffleId) continue;
    d.parkedFileGroups.delete(parkId);
    cancelTimer(d.out, fileGroupTimer(parkId));
    reply(d.out, parked.replyTo, fileGroup);
  }
}

/** Why no copy of a partition's epoch could be committed: each copy's worker and reason. */
function lostEpoch(
  progress: CommitProgress,
  partitionId: number,
  epoch: number,
  ofEpoch: readonly PartitionLocation[],
): string {
  const why = ofEpoch.map(
    (c) =>
      `${c.mode} on ${workerKey(c.worker)}: ${progress.failed.get(locationCopyKey(c)) ?? 'not committed'}`,
  );
  return `partition ${partitionId} epoch ${epoch} (${why.join('; ')})`;
}

/** What one winning map wrote to one partition, as a reducer's file group carries it. */
type ExpectedWrite = PartitionWritten & { readonly mapId: number };

/** The list of a partition no map wrote to: one for every such partition, frozen so that nothing adds to it. */
const NOTHING_EXPECTED: readonly ExpectedWrite[] = Object.freeze([]);

/**
 * What each winning map wrote, by partition (the index), in map order: one pass over every map's report (looking each
 * partition up in every map's list instead was partitions × maps × entries, hours for a shuffle of 10,000
 * partitions and 1,000 maps), after one that counts each partition's entries so that each list is made at its size:
 * grown from one entry, a list of two had room for seventeen, and at 10,000 partitions those lists were the largest
 * site of the lifecycle manager's promoted bytes in the many-partitions benchmark (the file group lives until the
 * shuffle is unregistered). A map reports a partition once; should it not, its first entry is the one a reader is
 * held to.
 */
function expectedByPartition(shuffle: LmShuffle): (readonly ExpectedWrite[])[] {
  const partitions = shuffle.numPartitions;
  const reports = [...shuffle.written].sort(([a], [b]) => a - b);
  const lengths = new Uint32Array(partitions);
  const lastMapOf = new Float64Array(partitions).fill(Number.NaN);
  // A report's partition outside the shuffle reaches no reader's group (and must not grow the lists).
  const counts = (mapId: number, partitionId: number): boolean => {
    if (!isPartitionOf(partitionId, partitions) || lastMapOf[partitionId] === mapId) return false;
    lastMapOf[partitionId] = mapId;
    return true;
  };
  for (const [mapId, written] of reports)
    for (const entry of written) if (counts(mapId, entry.partitionId)) lengths[entry.partitionId]! += 1;
  const expected = new Array<readonly ExpectedWrite[]>(partitions);
  for (let partitionId = 0; partitionId < partitions; partitionId += 1) {
    const length = lengths[partitionId]!;
    expected[partitionId] = length === 0 ? NOTHING_EXPECTED : new Array<ExpectedWrite>(length);
  }
  lastMapOf.fill(Number.NaN);
  const filled = new Uint32Array(partitions);
  for (const [mapId, written] of reports) {
    for (const entry of written) {
      const { partitionId } = entry;
      if (!counts(mapId, partitionId)) continue;
      const item = { mapId, partitionId, batches: entry.batches, bytes: entry.bytes };
      (expected[partitionId] as ExpectedWrite[])[filled[partitionId]!] = item;
      filled[partitionId]! += 1;
    }
  }
  return expected;
}

/**
 * The reserved copies in partition order (a stable counting sort: a partition's copies keep their reserve order),
 * with where each partition's run starts (`starts[numPartitions]` is the end): one array for the whole shuffle
 * rather than one per partition. A copy of a partition outside the shuffle belongs to no group.
 */
export function copiesByPartition(
  reserved: readonly PartitionLocation[],
  numPartitions: number,
): { readonly ordered: readonly PartitionLocation[]; readonly starts: Uint32Array } {
  const starts = new Uint32Array(numPartitions + 1);
  for (const copy of reserved)
    if (isPartitionOf(copy.partitionId, numPartitions)) starts[copy.partitionId + 1]! += 1;
  for (let p = 0; p < numPartitions; p += 1) starts[p + 1]! += starts[p]!;
  const next = starts.slice(0, numPartitions);
  const ordered = new Array<PartitionLocation>(starts[numPartitions]!);
  for (const copy of reserved) {
    if (!isPartitionOf(copy.partitionId, numPartitions)) continue;
    ordered[next[copy.partitionId]!] = copy;
    next[copy.partitionId]! += 1;
  }
  return { ordered, starts };
}

/** Whether `partitionId` is one of a shuffle's `numPartitions` (a whole number from 0). */
function isPartitionOf(partitionId: number, numPartitions: number): boolean {
  return Number.isInteger(partitionId) && partitionId >= 0 && partitionId < numPartitions;
}

export function onGetReducerFileGroup(d: Draft, shuffleId: ShuffleId, replyTo: ReplyTo): void {
  // Said at debug: how many asks a shuffle's reducers cost the lifecycle manager (one per executor, not per task).
  log(d.out, 'debug', 'file group asked', { shuffleId });
  const shuffle = d.shuffles.get(shuffleId);
  if (shuffle === undefined) {
    reply(
      d.out,
      replyTo,
      unregistered(
        d.unregisteredShuffles.has(shuffleId)
          ? `shuffle ${shuffleId} of ${d.config.appId} was unregistered by the driver; its files are released`
          : `shuffle ${shuffleId} was never registered with ${d.config.appId}'s lifecycle manager`,
      ),
    );
    return;
  }
  if (shuffle.fileGroup !== undefined) {
    reply(d.out, replyTo, shuffle.fileGroup);
    return;
  }
  // Parked until the commit ends, bounded: the reducer is told to ask again rather than wait forever.
  const parkId = d.nextParkId;
  d.nextParkId += 1;
  d.parkedFileGroups.set(parkId, { replyTo, shuffleId });
  setTimer(d.out, fileGroupTimer(parkId), d.out.now + d.config.fileGroupWaitMs);
}

/** The shuffle is being unregistered: reducers parked on its file group are told so, with `why`. */
export function abandonParkedFileGroups(d: Draft, shuffleId: ShuffleId, why: string): void {
  for (const [parkId, parked] of [...d.parkedFileGroups]) {
    if (parked.shuffleId !== shuffleId) continue;
    d.parkedFileGroups.delete(parkId);
    cancelTimer(d.out, fileGroupTimer(parkId));
    reply(d.out, parked.replyTo, unregistered(why));
  }
}

function unregistered(message: string): GetReducerFileGroupResponse {
  return {
    type: 'GetReducerFileGroupResponse',
    status: 'SHUFFLE_UNREGISTERED',
    fileGroups: [],
    mapAttempts: [],
    message,
  };
}

export function parkIdOfTimer(name: string): number | undefined {
  return name.startsWith(FILE_GROUP_TIMER_PREFIX)
    ? Number(name.slice(FILE_GROUP_TIMER_PREFIX.length))
    : undefined;
}

export function onFileGroupWaitOver(d: Draft, parkId: number): void {
  const parked = d.parkedFileGroups.get(parkId);
  if (parked === undefined) return;
  d.parkedFileGroups.delete(parkId);
  const shuffle = d.shuffles.get(parked.shuffleId);
  reply(d.out, parked.replyTo, {
    type: 'GetReducerFileGroupResponse',
    status: 'STAGE_END_TIMEOUT',
    fileGroups: [],
    mapAttempts: [],
    message:
      shuffle === undefined
        ? `shuffle ${parked.shuffleId} is no longer registered`
        : `the map stage of shuffle ${parked.shuffleId} has not ended yet (${shuffle.endedMaps} of ` +
          `${shuffle.numMappers} maps ended, phase ${shuffle.phase}${waitingMaps(shuffle.mapAttempts)}); ask again`,
  });
}

/** `; waiting for maps 0, 3, 7` (the first 20 without a winning attempt), or nothing when every map has one. */
function waitingMaps(mapAttempts: readonly number[]): string {
  const waiting: number[] = [];
  mapAttempts.forEach((attempt, mapId) => {
    if (attempt < 0) waiting.push(mapId);
  });
  if (waiting.length === 0) return '';
  const shown = waiting.slice(0, 20).join(', ');
  return `; waiting for map${waiting.length === 1 ? '' : 's'} ${shown}${waiting.length > 20 ? ` and ${waiting.length - 20} more` : ''}`;
}

const FILE_GROUP_TIMER_PREFIX = 'file-group:';

function fileGroupTimer(parkId: number): string {
  return `${FILE_GROUP_TIMER_PREFIX}${parkId}`;
}

function reservedByWorker(reserved: readonly PartitionLocation[]): Map<WorkerKey, PartitionLocation[]> {
  const byWorker = new Map<WorkerKey, PartitionLocation[]>();
  for (const copy of reserved) {
    const key = workerKey(copy.worker);
    const copies = byWorker.get(key);
    if (copies === undefined) byWorker.set(key, [copy]);
    else copies.push(copy);
  }
  return byWorker;
}
