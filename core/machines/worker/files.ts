import { PARTITION_MODE_CODE, type PartitionMode, type ShuffleKey } from '../../domain/index.ts';
import type { CommittedFile } from '../../protocol/messages.ts';
import { setEntry } from '../outbox.ts';
import { owned, type PartitionFile, type WorkerMachineState, type WorkerShuffle } from './state.ts';

/** The name of a partition file from the uniqueId (`id-epoch`) a commit or a reader names, and its mode. */
export function fileNameFor(uniqueId: string, mode: PartitionMode): string {
  return `${uniqueId}-${PARTITION_MODE_CODE[mode]}`;
}

/**
 * Files a reserve creates, or a commit starts flushing, in one step (WorkerConfig.filesPerStep): about 10 ms of a
 * worker's time at 256.
 */
export const FILES_PER_STEP = 256;

export function filesPerStep(s: WorkerMachineState): number {
  return Math.max(1, s.config.filesPerStep ?? FILES_PER_STEP);
}

/** The file's id on this node (FileRef.id): unique across shuffles. */
export function fileId(shuffleKey: ShuffleKey, name: string): string {
  return `${shuffleKey}/${name}`;
}

export function getFile(
  s: WorkerMachineState,
  shuffleKey: ShuffleKey,
  name: string,
): PartitionFile | undefined {
  return s.shuffles.get(shuffleKey)?.files.get(name);
}

/**
 * Adds (or replaces) a file of an existing shuffle, in the shuffle's own file map (the machine owns its state, see
 * machine.ts): a reserve's new files. A stored record is changed in place (editFile), not stored again.
 */
export function putFile(
  s: WorkerMachineState,
  shuffleKey: ShuffleKey,
  file: PartitionFile,
): WorkerMachineState {
  const shuffle = s.shuffles.get(shuffleKey);
  if (shuffle !== undefined) setEntry(shuffle.files, file.name, file);
  return s;
}

export function putShuffle(
  s: WorkerMachineState,
  shuffleKey: ShuffleKey,
  shuffle: WorkerShuffle,
): WorkerMachineState {
  setEntry(s.shuffles, shuffleKey, shuffle);
  return s;
}

/** Who a shuffle's application runs as, built one way wherever a record gets it (a reserve, a restored record). */
export function shuffleUser(name: string | undefined, tenant: string | undefined): WorkerShuffle['user'] {
  if (name === undefined) return undefined;
  return tenant === undefined ? { name } : { name, tenant };
}

/**
 * A shuffle's record, optionally changed: every field named, always in this order, as `fileDraft` does for files.
 * A record that gained a field at its commit (`mapAttempts`) or lacked one (`user`) took another shape in V8, and
 * the push path's code, optimised on the records of shuffles still being pushed, was thrown away at a worker's
 * first commits and compiled again during its next shuffle (docs/performance.md, "Method"). WorkerShuffle names
 * `user` and `mapAttempts` as required (undefined when absent), so a record built anywhere else names them too.
 */
export function shuffleRecord(shuffle: WorkerShuffle, change?: Partial<WorkerShuffle>): WorkerShuffle {
  const record: { -readonly [K in keyof WorkerShuffle]: WorkerShuffle[K] } = {
    appId: shuffle.appId,
    shuffleId: shuffle.shuffleId,
    splitThreshold: shuffle.splitThreshold,
    splitMode: shuffle.splitMode,
    memoryEnabled: shuffle.memoryEnabled,
    user: shuffle.user,
    files: shuffle.files,
    mapAttempts: shuffle.mapAttempts,
  };
  return change === undefined ? record : Object.assign(record, change);
}

/**
 * A file record, writable. A stored record is the machine's own and a transition changes it in place (editFile), as
 * it changes its maps (setEntry in outbox.ts): a fresh copy per transition, four or five per file and push, lived
 * until the file's next transition, so on a worker of 10,000 files nearly every copy outlived two scavenges and was
 * promoted, a third of the bytes the worker promoted (docs/performance.md, "What was built"). New records (a
 * reserve's, recovery's, a create retried on another tier) are built by fileDraft, every field named.
 */
export type FileDraft = { -readonly [K in keyof PartitionFile]: PartitionFile[K] };

/**
 * A draft copy of `file`, optionally changed: every field named, always in this order, so that every file record of
 * a worker has the same shape. Records copied by object spread took a slow path in V8 (Node 20) once a worker's
 * records came in several shapes (≈ 1 µs a copy, on every write completion: ≈ 3 % of a simulated seed); creating
 * the records here too (reserve, recovery) keeps the one shape from the start.
 */
export function fileDraft(file: PartitionFile, change?: Partial<FileDraft>): FileDraft {
  const draft: FileDraft = {
    name: file.name,
    location: file.location,
    file: file.file,
    status: file.status,
    failure: file.failure,
    bytes: file.bytes,
    chunkStarts: file.chunkStarts,
    queue: file.queue,
    busyOp: file.busyOp,
  };
  return change === undefined ? draft : Object.assign(draft, change);
}

/**
 * The stored record of a file, to be changed in place by the transition at hand: whoever holds it (a push judging
 * its batches, a loop over a shuffle's files) sees the change, as it would see the next record looked up.
 */
export function editFile(file: PartitionFile): FileDraft {
  return file;
}

/** Appends `length` bytes to the draft: a chunk ends at this batch boundary once it reached the size. */
export function appendBytes(file: FileDraft, length: number, chunkSizeBytes: number): void {
  const bytes = file.bytes + length;
  const chunkStart = file.chunkStarts[file.chunkStarts.length - 1] ?? 0;
  // The record's own list, as the record is (readers get copies: chunkOffsets).
  if (bytes - chunkStart >= chunkSizeBytes) owned(file.chunkStarts).push(bytes);
  file.bytes = bytes;
}

/** Chunk boundaries as readers get them: starting with 0, ending with the file's length, strictly increasing. */
export function chunkOffsets(file: Pick<PartitionFile, 'bytes' | 'chunkStarts'>): number[] {
  if (file.bytes === 0) return [0];
  const inner = file.chunkStarts.filter((start) => start > 0 && start < file.bytes);
  return [0, ...inner, file.bytes];
}

export function committedFileOf(file: PartitionFile): CommittedFile {
  const offered = file.location.storage;
  return {
    uniqueId: `${file.location.partitionId}-${file.location.epoch}`,
    mode: file.location.mode,
    // The offered storage itself when the file is where it was offered: one object the files of a shuffle share,
    // where a commit of 10,000 files made 10,000.
    storage:
      offered.type === file.file.tier && offered.mountPoint === file.file.mountPoint
        ? offered
        : { type: file.file.tier, mountPoint: file.file.mountPoint, availableTypes: offered.availableTypes },
    bytes: file.bytes,
    chunkOffsets: chunkOffsets(file),
  };
}

/** Files that still wait for a commit or destroy (a graceful shutdown waits for them). */
export function uncommittedCount(s: WorkerMachineState): number {
  let count = 0;
  for (const shuffle of s.shuffles.values()) {
    for (const file of shuffle.files.values())
      if (file.status === 'open' || file.status === 'committing') count += 1;
  }
  return count;
}
