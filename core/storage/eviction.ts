import { isLocalType } from '../domain/index.ts';
import type { WorkerStorage } from './tier-choice.ts';

/** Whether the worker has anywhere other than memory to put a file: a healthy local disk with room, or a DFS tier. */
export function hasPersistentStorage(worker: WorkerStorage): boolean {
  return (
    worker.distributed.length > 0 ||
    worker.disks.some((disk) => isLocalType(disk.type) && disk.status === 'HEALTHY' && disk.usableBytes > 0)
  );
}

/**
 * Whether a memory file must be evicted before the next write lands (`svc.worker.memoryFileStorage.maxFileSize`,
 * default 8 MiB). Unlike the reference, which checks the length before the write and so lets a file overshoot by
 * one batch, svc counts the incoming bytes: a memory file never grows past the limit. Without persistent storage
 * there is nowhere to evict to; the split decision then answers HARD_SPLIT instead (see split.ts).
 */
export function needsEvictionOnWrite(
  fileBytes: number,
  incomingBytes: number,
  maxMemoryFileBytes: number,
  worker: WorkerStorage,
): boolean {
  return fileBytes + incomingBytes > maxMemoryFileBytes && hasPersistentStorage(worker);
}

export interface MemoryFile {
  readonly id: string;
  readonly bytes: number;
  /** A committed file is no longer written and stays where it is until read and deleted. */
  readonly committed: boolean;
}

/**
 * The memory files to evict under memory pressure: once usage reaches `evictRatio × limit`
 * (`svc.worker.memoryFileStorage.evict.ratio`, default 0.5), the largest open files go first (ties keep the input
 * order) until usage drops below that line, or no open file is left. Empty when below the line or when the worker
 * has nowhere to evict to.
 */
/** Whether the memory tier holds enough that files must leave it (`evictRatio` of its limit, or more). */
export function isOverEvictLine(limitBytes: number, usedBytes: number, evictRatio: number): boolean {
  return limitBytes > 0 && usedBytes >= evictRatio * limitBytes;
}

export function pickMemoryEvictions(
  files: readonly MemoryFile[],
  worker: WorkerStorage,
  evictRatio: number,
): readonly string[] {
  const { limitBytes, usedBytes } = worker.memory;
  const line = evictRatio * limitBytes;
  if (!isOverEvictLine(limitBytes, usedBytes, evictRatio) || !hasPersistentStorage(worker)) return [];
  const open = files
    .map((file, order) => ({ file, order }))
    .filter(({ file }) => !file.committed)
    .sort((a, b) => b.file.bytes - a.file.bytes || a.order - b.order);
  const chosen: string[] = [];
  let remaining = usedBytes;
  for (const { file } of open) {
    if (remaining < line) break;
    chosen.push(file.id);
    remaining -= file.bytes;
  }
  return chosen;
}
