import { mkdir, open, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { DirectoryHealth } from './directory-health.ts';
import { errnoCode, IoFailure } from './io-error.ts';
import type { ReadBuffers } from './read-buffers.ts';
import type { TierFiles } from './tier-files.ts';
import { unzeroedBytes } from '../unzeroed-bytes.ts';

interface OpenFile {
  /** Undefined once the root failed: the handle was closed because its file went with the old directory. */
  handle: FileHandle | undefined;
  /** Bytes appended so far: where the next append goes, and where reads stop. */
  length: number;
  /** The root's generation when the file was opened (directory-health.ts). */
  readonly generation: number;
}

/** How often a create retries after its shuffle's directory vanished under it (a delete removed it when empty). */
const CREATE_ATTEMPTS = 3;

/**
 * The files of one directory-backed tier (a disk, or the DFS mount). Every file is opened once and its handle kept
 * for appends and reads until it is deleted or the tier closes, so that an append is one positional `writev` and a
 * read one positional read, with no open or stat per operation. Callers order operations per file (file-lanes.ts);
 * methods throw IoFailure or Node.js system errors, which the caller maps to the core's IoError.
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
      this.files.set(id, { handle, length: 0, generation });
    });
  }

  async append(id: string, chunks: readonly Uint8Array[]): Promise<void> {
    return this.guard(async () => {
      const file = await this.live(id);
      const written = await writeAllAt(file.handle!, chunks, file.length);
      // Bytes that reached a file of a directory removed meanwhile are lost: not a success.
      this.assertCurrent(file);
      file.length += written;
    });
  }

  async flush(id: string): Promise<void> {
    return this.guard(async () => {
      const file = await this.live(id);
      await file.handle!.datasync();
      this.assertCurrent(file);
    });
  }

  /**
   * [offset, offset + length), short at the end of the file, in one buffer: one of the read buffers when `lend`
   * (a chunk to serve, whose buffer the transport gives back once written).
   */
  async read(id: string, offset: number, length: number, lend = false): Promise<Uint8Array> {
    return this.guard(async () => {
      const file = await this.live(id);
      // Only the bytes read are handed out (a short read returns the filled part).
      const size = Math.max(0, Math.min(length, file.length - offset));
      const bytes =
        lend && this.readBuffers !== undefined ? this.readBuffers.take(size) : unzeroedBytes(size);
      let filled = 0;
      while (filled < bytes.length) {
        const { bytesRead } = await file.handle!.read(bytes, filled, bytes.length - filled, offset + filled);
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
    if (file?.handle !== undefined) await closeQuietly(file.handle);
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
      if (file.handle !== undefined) void closeQuietly(file.handle);
      file.handle = undefined;
    }
  }

  async closeAll(): Promise<void> {
    const handles = [...this.files.values()].flatMap((file) =>
      file.handle === undefined ? [] : [file.handle],
    );
    this.files.clear();
    await Promise.all(handles.map(closeQuietly));
  }

  private pathOf(id: string): string {
    return path.join(this.root, id);
  }

  /** Opens a new file for writing, creating its shuffle's directory (never the root itself) when needed. */
  private async openNew(id: string, segments: readonly string[]): Promise<FileHandle> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await open(this.pathOf(id), 'wx+'); // read and write: the file is served from the same handle
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
    const handle = await open(this.pathOf(id), 'r+');
    try {
      const { size } = await handle.stat();
      if (generation !== this.health.generation) throw this.rootFailed();
      const file = { handle, length: size, generation };
      this.files.set(id, file);
      return file;
    } catch (error) {
      await closeQuietly(handle);
      throw error;
    }
  }

  private assertCurrent(file: OpenFile): void {
    if (file.handle === undefined || file.generation !== this.health.generation) throw this.rootFailed();
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
