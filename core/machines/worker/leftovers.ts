import { parseShuffleKey, type ShuffleKey } from '../../domain/index.ts';
import type { FileRef } from '../effects.ts';
import { count, log, type Outbox } from '../outbox.ts';
import type { WorkerMachineState } from './state.ts';

/**
 * Leftovers: partition files a worker finds on its local disks when it starts that belong to no file it holds (a
 * crash, or a restart without graceful shutdown, forgot them). The worker names their shuffles in its heartbeats
 * beside the shuffles it holds, so that the master answers, as for any other, which of them it no longer has
 * registered; those files are deleted once the grace period (`svc.worker.storage.expireDirs.timeout`, counted from
 * the start) has passed, with one log line and the LeftoverFilesRemovedCount metric. A shuffle the master still
 * knows keeps its files: its application may still read them from a replica's peer, or end later.
 *
 * The reference's workers clean expired application directories the same way, by age and by whether any shuffle of
 * the application is still active; svc asks the master, which knows every application, instead of trusting the age
 * of a directory alone. The driver lists the local disks and the DFS directory (memory does not survive a restart).
 * The DFS directory is shared: a file another worker holds is found as well, and kept while the master knows its
 * shuffle; once the shuffle ends, its holder and this worker both delete it. So the DFS files of a worker killed
 * mid-write go once any worker sharing the directory (the killed one, restarted, or another) starts again.
 */

/** Takes the files the driver found on the worker's disks at start; those the worker holds are not leftovers. */
export function findLeftovers(
  s: WorkerMachineState,
  out: Outbox,
  found: readonly FileRef[],
): WorkerMachineState {
  const held = new Set<string>();
  for (const shuffle of s.shuffles.values())
    for (const file of shuffle.files.values()) held.add(file.file.id);
  const leftovers = new Map<ShuffleKey, FileRef[]>();
  for (const file of found) {
    const key = shuffleKeyOf(file);
    if (key === undefined || held.has(file.id)) continue;
    const files = leftovers.get(key);
    if (files === undefined) leftovers.set(key, [file]);
    else files.push(file);
  }
  if (leftovers.size === 0) return s;
  log(out, 'info', 'worker.leftovers.found', {
    shuffles: leftovers.size,
    files: countFiles(leftovers),
    graceMs: s.config.leftoverGraceMs,
    hint: 'files of an earlier run of this worker; removed once the master no longer knows their shuffles',
  });
  return { ...s, leftovers, leftoversFoundAt: out.now };
}

/** The shuffles a heartbeat names: those the worker holds, then those of its leftovers. */
export function heartbeatShuffleKeys(s: WorkerMachineState): ShuffleKey[] {
  const keys = [...s.shuffles.keys()];
  for (const key of s.leftovers.keys()) if (!s.shuffles.has(key)) keys.push(key);
  return keys;
}

/**
 * The master answered a heartbeat: the leftovers of the shuffles it no longer has are deleted once the grace period
 * since the start has passed (before that, they are named again in the next heartbeat).
 */
export function removeExpiredLeftovers(
  s: WorkerMachineState,
  out: Outbox,
  expired: readonly ShuffleKey[],
): WorkerMachineState {
  if (s.leftovers.size === 0 || expired.length === 0) return s;
  if (out.now - s.leftoversFoundAt < s.config.leftoverGraceMs) return s;
  const remaining = new Map(s.leftovers);
  const removed = new Map<ShuffleKey, readonly FileRef[]>();
  for (const key of expired) {
    const files = remaining.get(key);
    if (files === undefined) continue;
    remaining.delete(key);
    removed.set(key, files);
    for (const file of files) out.effects.push({ kind: 'deleteFile', file });
  }
  if (removed.size === 0) return s;
  const files = countFiles(removed);
  const applications = [...new Set([...removed.keys()].map((key) => parseShuffleKey(key).appId))];
  log(out, 'info', 'worker.leftovers.removed', {
    shuffles: removed.size,
    files,
    applications,
    reason: 'the master no longer has these shuffles',
    remainingShuffles: remaining.size,
  });
  count(out, 'LeftoverFilesRemovedCount', files);
  return { ...s, leftovers: remaining };
}

/** `<shuffleKey>/<fileName>`: the shuffle a partition file belongs to, or undefined for anything else. */
function shuffleKeyOf(file: FileRef): ShuffleKey | undefined {
  const segments = file.id.split('/');
  if (segments.length !== 2 || segments[0] === '' || segments[1] === '') return undefined;
  const key = segments[0]!;
  try {
    parseShuffleKey(key);
  } catch {
    return undefined;
  }
  return key;
}

function countFiles(byShuffle: ReadonlyMap<ShuffleKey, readonly FileRef[]>): number {
  let files = 0;
  for (const list of byShuffle.values()) files += list.length;
  return files;
}
