import type { FileHandle } from 'node:fs/promises';
import { errnoCode } from './io-error.ts';

/** A file whose handle the budget may close while no operation uses it (it is opened again when next needed). */
export interface HandleHolder {
  readonly handle: FileHandle | undefined;
  /** Operations using the handle now: a holder in use is never closed. */
  readonly inUse: number;
  /**
   * Closes the handle; the file stays known, and its next operation opens it again. Settles once the descriptor is
   * given back (never rejects).
   */
  close(): Promise<void>;
}

/**
 * The open handles of a worker's directory tiers (disks and DFS), at most `limit` of them: a file keeps its handle
 * between operations (one positional write or read each, no open per operation), and when one more is opened, the
 * least recently used that no operation holds is closed. Handles in use at that moment may take the count past the
 * limit until they are released; a worker serving more files than that at once is what the limit is for.
 */
export class OpenHandles {
  /** Holders with an open handle, least recently used first (a Map keeps insertion order). */
  private readonly open = new Map<HandleHolder, true>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`the open-handle limit ${limit} is not ≥ 1`);
  }

  get size(): number {
    return this.open.size;
  }

  /** `holder` opened its handle or used it: it is the most recently used, and the oldest idle others close. */
  used(holder: HandleHolder): void {
    this.open.delete(holder);
    this.open.set(holder, true);
    void this.trim(this.limit, holder); // closing quietly in the background: nothing waits for the descriptor
  }

  /** `holder` closed its handle (deleted, its directory failed): it no longer counts. */
  forget(holder: HandleHolder): void {
    this.open.delete(holder);
  }

  /** An operation released `holder`: if the count is over the limit, idle handles close now. */
  released(): void {
    if (this.open.size > this.limit) void this.trim(this.limit);
  }

  /**
   * The process ran out of descriptors (EMFILE, ENFILE: sockets count too): closes half of the idle handles, so that
   * the open that failed can be tried once more. Resolves, once their descriptors are given back (a close runs on
   * libuv's thread pool: an open retried before it completes finds none free), to how many were closed.
   */
  async shed(): Promise<number> {
    const closing = this.trim(Math.floor(this.open.size / 2));
    await Promise.all(closing);
    return closing.length;
  }

  /** Closes idle handles, least recently used first, until `target` are open; returns the closes in flight. */
  private trim(target: number, keep?: HandleHolder): Promise<void>[] {
    const closing: Promise<void>[] = [];
    for (const holder of this.open.keys()) {
      if (this.open.size <= target) break;
      if (holder.inUse > 0 || holder === keep) continue;
      this.open.delete(holder);
      closing.push(holder.close());
    }
    return closing;
  }
}

/** Whether `error` says the process (or the system) has no file descriptor left: not the disk's fault. */
export function outOfDescriptors(error: unknown): boolean {
  const code = errnoCode(error);
  return code === 'EMFILE' || code === 'ENFILE';
}

/**
 * Opens with `openFile`; when the process is out of descriptors, closes idle handles of `handles` and, once their
 * descriptors are free, tries once more. A second EMFILE/ENFILE is thrown as it is (ioErrorOf names it
 * NO_DESCRIPTORS, which charges no disk).
 */
export async function openWithin(
  handles: OpenHandles,
  openFile: () => Promise<FileHandle>,
): Promise<FileHandle> {
  try {
    return await openFile();
  } catch (error) {
    if (!outOfDescriptors(error) || (await handles.shed()) === 0) throw error;
    return openFile();
  }
}
