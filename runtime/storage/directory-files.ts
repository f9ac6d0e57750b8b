import { mkdir, open, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { DirectoryHealth } from './directory-health.ts';
import { errnoCode, IoFailure } from './io-error.ts';
import { OpenHandles, openWithin, type HandleHolder } from './open-handles.ts';
import type { ReadBuffers } from './read-buffers.ts';
import type { TierFiles } from './tier-files.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';

/** A file of the tier: its handle while open (the budget may close it between operations), its length. */
class OpenFile implements HandleHolder {
  handle: FileHandle | undefined;
  inUse = 0;
  /** The root failed: the file went with the old directory and is never opened again. */
  lost = false;
  /** A reopen in flight, shared by the operations that need the handle meanwhile. */
  reopening: Promise<FileHandle> | undefined;

  constructor(
    handle: FileHandle,
    /** Bytes appended so far: where the next append goes, and where reads stop. */
    public length: number,
    /** The root's generation when the file was opened (directory-health.ts). */
    readonly generation: number,
  ) {
    this.handle = handle;
  }

  close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    return handle === undefined ? Promise.resolve() : closeQuietly(handle);
  }
}

/** Open handles of a DirectoryFiles made without a shared budget (tests). */
const DEFAULT_OPEN_FILES = 4096;

/** How often a create retries after its shuffle's directory vanished under it (a delete removed it when empty). */
const CREATE_ATTEMPTS = 3;

/**
 * The files of one directory-backed tier (a disk, or the DFS mount). A file's handle is kept for appends and reads
 * until it is deleted or the tier closes, so that an append is one positional `writev` and a read one positional
 * read, with no open or stat per operation; `handles` bounds how many are open across the worker's tiers (the least
 * recently used idle one is closed, and opened again when next needed). Callers order operations per file
 * (file-lanes.ts); methods throw IoFailure or Node.js system errors, which the caller maps to the core's IoError.
 */
export class DirectoryFiles implements TierFiles {
  private readonly files = new Map<string, OpenFile>();
  /** Opens of files this process did not create (after a restart), shared by reads that run together. */
  private readonly opening = new Map<string, Promise<OpenFile>>();

  constructor(
    readonly root: string,
    readonly health: DirectoryHealth,
    /** Where served chunks are read into (reused once written); absent: a fresh buffer each. */
    private readonly readBuffers?: ReadBuffers,
    /** The open handles of every directory tier of the worker, bounded (open-handles.ts). */
    private readonly handles: OpenHandles = new OpenHandles(DEFAULT_OPEN_FILES),
  ) {}

  async create(id: string, segments: readonly string[]): Promise<void> {
    return this.guard(async () => {
      if (!(await this.health.confirm(true))) throw this.rootFailed();
      const known = this.files.get(id);
      if (known !== undefined) {
        if (known.generation === this.health.generation)
          throw new IoFailure('EXISTS', `${this.pathOf(id)} exists`);
        this.files.delete(id); // opened in a directory that is gone
      }
      const generation = this.health.generation;
      const handle = await this.openNew(id, segments);
      if (generation !== this.health.generation) {
        await closeQuietly(handle);
        throw this.rootFailed();
      }
      const file = new OpenFile(handle, 0, generation);
      this.files.set(id, file);
      this.handles.used(file);
    });
  }

  async append(id: string, chunks: readonly Uint8Array[]): Promise<void> {
    return this.withHandle(id, async (file, handle) => {
      const written = await writeAllAt(handle, chunks, file.length);
      // Bytes that reached a file of a directory removed meanwhile are lost: not a success.
      this.assertCurrent(file);
      file.length += written;
    });
  }

  /** Syncs the file's data: on whichever handle is open, since a sync is of the file, not of a descriptor. */
  async flush(id: string): Promise<void> {
    return this.withHandle(id, async (file, handle) => {
      await handle.datasync();
      this.assertCurrent(file);
    });
  }

  /**
   * [offset, offset + length), short at the end of the file, in one buffer: one of the read buffers when `lend`
   * (a chunk to serve, whose buffer the transport gives back once written).
   */
  async read(id: string, offset: number, length: number, lend = false): Promise<Uint8Array> {
    return this.withHandle(id, async (file, handle) => {
      // Only the bytes read are handed out (a short read returns the filled part).
      const size = Math.max(0, Math.min(length, file.length - offset));
      const bytes =
        lend && this.readBuffers !== undefined ? this.readBuffers.take(size) : unzeroedBytes(size);
      let filled = 0;
      while (filled < bytes.length) {
        const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      this.assertCurrent(file);
      return filled === bytes.length ? bytes : bytes.subarray(0, filled);
    });
  }

  /** The whole file in one buffer (the source of a move). */
  async contents(id: string): Promise<readonly Uint8Array[]> {
    const length = await this.guard(async () => (await this.live(id)).length);
    return [await this.read(id, 0, length)];
  }

  /** Creates `id` holding `chunks`, durably (the target of a move); a failure leaves no partial file behind. */
  async adopt(id: string, segments: readonly string[], chunks: readonly Uint8Array[]): Promise<void> {
    await this.create(id, segments);
    try {
      await this.append(id, chunks);
      await this.flush(id);
    } catch (error) {
      // The create's or write's failure is the one to report; a remove failing as well changes nothing of it.
      await this.remove(id, segments).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Closes and unlinks the file; a missing file is fine. A file that exists and cannot be unlinked (permissions, an
   * I/O error) rejects with the system error: the caller reports it (TierStorage's onDeleteFailed), since the core's
   * delete completes silently and its bytes would otherwise stay on the disk unnoticed.
   */
  async remove(id: string, segments: readonly string[]): Promise<void> {
    const file = this.files.get(id);
    this.files.delete(id);
    if (file !== undefined) {
      this.handles.forget(file);
      file.lost = true;
      const handle = file.handle;
      file.handle = undefined;
      if (handle !== undefined) await closeQuietly(handle);
    }
    // A file of a directory that is gone went with it; the path may now name a directory created since.
    if (
      this.health.failed !== undefined ||
      (file !== undefined && file.generation !== this.health.generation)
    )
      return;
    const filePath = this.pathOf(id);
    try {
      await unlink(filePath);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return; // missing already: what a delete wants
      throw error;
    }
    // An emptied shuffle directory would stay forever otherwise; a create racing with this retries (openNew).
    if (segments.length > 1) await rmdir(path.dirname(filePath)).catch(() => undefined);
  }

  /** The root failed: the open files went with the directory; release their descriptors (and disk space). */
  releaseAll(): void {
    for (const file of this.files.values()) {
      this.handles.forget(file);
      file.lost = true;
      void file.close();
    }
  }

  async closeAll(): Promise<void> {
    const handles = [...this.files.values()].flatMap((file) => {
      this.handles.forget(file);
      file.lost = true;
      return file.handle === undefined ? [] : [file.handle];
    });
    for (const file of this.files.values()) file.handle = undefined;
    this.files.clear();
    await Promise.all(handles.map(closeQuietly));
  }

  /**
   * Runs `operation` with the file's handle, opening it again if the budget closed it; the handle is not closed
   * while the operation runs.
   */
  private async withHandle<T>(
    id: string,
    operation: (file: OpenFile, handle: FileHandle) => Promise<T>,
  ): Promise<T> {
    return this.guard(async () => {
      const file = await this.live(id);
      file.inUse += 1;
      try {
        const handle = file.handle ?? (await this.reopen(id, file));
        this.handles.used(file);
        return await operation(file, handle);
      } finally {
        file.inUse -= 1;
        this.handles.released();
      }
    });
  }

  /** Opens again a file whose handle the budget closed (one open shared by the operations waiting for it). */
  private reopen(id: string, file: OpenFile): Promise<FileHandle> {
    file.reopening ??= openWithin(this.handles, () => open(this.pathOf(id), 'r+'))
      .then(async (handle) => {
        if (file.lost || file.generation !== this.health.generation) {
          await closeQuietly(handle);
          throw this.rootFailed();
        }
        file.handle = handle;
        return handle;
      })
      .finally(() => (file.reopening = undefined));
    return file.reopening;
  }

  private pathOf(id: string): string {
    return path.join(this.root, id);
  }

  /** Opens a new file for writing, creating its shuffle's directory (never the root itself) when needed. */
  private async openNew(id: string, segments: readonly string[]): Promise<FileHandle> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        // Read and write: the file is served from the same handle.
        return await openWithin(this.handles, () => open(this.pathOf(id), 'wx+'));
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT' || segments.length === 1 || attempt === CREATE_ATTEMPTS)
          throw error;
      }
      let dir = this.root;
      for (const segment of segments.slice(0, -1)) {
        dir = path.join(dir, segment);
        await mkdir(dir).catch((error: unknown) => {
          if (errnoCode(error) !== 'EEXIST') throw error;
        });
      }
    }
  }

  /** The open file, opening one this process did not create (it may predate a restart). */
  private async live(id: string): Promise<OpenFile> {
    if (this.health.failed !== undefined) throw this.rootFailed();
    const known = this.files.get(id);
    if (known !== undefined) {
      this.assertCurrent(known);
      return known;
    }
    let opening = this.opening.get(id);
    if (opening === undefined) {
      opening = this.openExisting(id).finally(() => this.opening.delete(id));
      this.opening.set(id, opening);
    }
    return opening;
  }

  private async openExisting(id: string): Promise<OpenFile> {
    const generation = this.health.generation;
    const handle = await openWithin(this.handles, () => open(this.pathOf(id), 'r+'));
    try {
      const { size } = await handle.stat();
      if (generation !== this.health.generation) throw this.rootFailed();
      const file = new OpenFile(handle, size, generation);
      this.files.set(id, file);
      this.handles.used(file);
      return file;
    } catch (error) {
      await closeQuietly(handle);
      throw error;
    }
  }

  private assertCurrent(file: OpenFile): void {
    if (file.lost || file.generation !== this.health.generation) throw this.rootFailed();
  }

  private rootFailed(): IoFailure {
    return new IoFailure('IO_ERROR', this.health.failed ?? `${this.root} failed`);
  }

  /**
   * Runs an operation; a "no such file" from it may mean the whole directory is gone, which is a failed disk
   * (IO_ERROR), not a missing file, so the directory is checked before the error is believed.
   */
  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' && !(await this.health.confirm())) throw this.rootFailed();
      throw error;
    }
  }
}

/** Writes every chunk at `position` onwards, resuming after short writes; returns the bytes written. */
async function writeAllAt(
  handle: FileHandle,
  chunks: readonly Uint8Array[],
  position: number,
): Promise<number> {
  let pending = chunks.filter((chunk) => chunk.length > 0);
  let written = 0;
  while (pending.length > 0) {
    const { bytesWritten } =
      pending.length === 1
        ? await handle.write(pending[0]!, 0, pending[0]!.length, position + written)
        : await handle.writev(pending, position + written);
    if (bytesWritten === 0) throw new IoFailure('IO_ERROR', 'the file system accepted no bytes');
    written += bytesWritten;
    pending = dropWritten(pending, bytesWritten);
  }
  return written;
}

/** What is left of `chunks` once their first `count` bytes were written. */
function dropWritten(chunks: readonly Uint8Array[], count: number): Uint8Array[] {
  let skip = count;
  let index = 0;
  while (index < chunks.length && skip >= chunks[index]!.length) {
    skip -= chunks[index]!.length;
    index += 1;
  }
  const rest = chunks.slice(index);
  if (skip > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(skip);
  return rest;
}

async function closeQuietly(handle: FileHandle): Promise<void> {
  await handle.close().catch(() => undefined);
}
