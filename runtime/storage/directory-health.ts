import { statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { errnoCode } from './io-error.ts';

/**
 * Whether a tier's root directory (a disk's directory, the DFS mount) is still the one files were created in. On
 * Linux, a process keeps writing happily through open descriptors after the directory was removed: the bytes go to
 * unlinked files and are lost. So the directory's identity (device and inode) is taken when it is first seen, and
 * checked again whenever the file system says something happened to it (fs.watch on the directory and on its parent:
 * event-driven, no polling) and before every file is created there. Once the directory is gone or replaced the root
 * has failed: `generation` moves on, which makes every file opened before unusable, and `onFailed` runs once. A
 * later create that finds a directory there again (the core's disk probe) adopts it and the root is healthy again.
 */
export class DirectoryHealth {
  /** Changes on every failure and recovery; files opened in an earlier generation belong to a directory now gone. */
  generation = 0;
  private failure: string | undefined;
  private identity: Identity | undefined;
  private watchers: FSWatcher[] = [];
  private checking = false;
  private checkAgain = false;
  private closed = false;

  constructor(
    readonly dir: string,
    private readonly options: {
      /** Watch the directory (disks); a DFS mount is only checked before each create. */
      readonly watch: boolean;
      /**
       * The disk's own directory when `dir` is svc's working directory inside it (svc.worker.storage.workingDir):
       * a disk that comes back empty (a replaced disk, mounted again) gets its working directory made again by the
       * recovery probe, as at start. Without it, and never for the disk's directory itself, nothing is created: an
       * unmounted mount point must not silently fill the root file system.
       */
      readonly recreateUnder?: string;
      readonly onFailed: (reason: string) => void;
    },
  ) {}

  /** Why the root failed, or undefined while it is healthy. */
  get failed(): string | undefined {
    return this.failure;
  }

  /** Takes the directory's identity and starts watching it; a missing directory fails the root at once. */
  start(): void {
    let stats: Stats;
    try {
      stats = statSync(this.dir);
    } catch (error) {
      this.fail(`${this.dir} cannot be used (${errnoCode(error) ?? String(error)})`);
      return;
    }
    if (!stats.isDirectory()) {
      this.fail(`${this.dir} is not a directory`);
      return;
    }
    this.adopt(stats);
  }

  /**
   * Checks the directory now. Resolves true when it is the one files were created in; otherwise the root fails
   * (if it had not already) and the result is false. With `recover`, a failed root whose directory exists again is
   * adopted and counts as healthy.
   */
  async confirm(recover = false): Promise<boolean> {
    const generation = this.generation;
    let observed = await this.observe();
    if (
      recover &&
      this.failure !== undefined &&
      typeof observed === 'string' &&
      (await this.remakeWorkingDir())
    )
      observed = await this.observe();
    // A failure or recovery that happened meanwhile was decided on newer information than ours.
    if (this.closed || generation !== this.generation) return this.failure === undefined;
    if (this.failure !== undefined) {
      if (recover && typeof observed !== 'string') {
        this.failure = undefined;
        this.generation += 1;
        this.adopt(observed);
      }
      return this.failure === undefined;
    }
    if (typeof observed === 'string') {
      this.fail(observed);
      return false;
    }
    return true;
  }

  /** Makes the working directory again when the disk's directory is there; true when it did. */
  private async remakeWorkingDir(): Promise<boolean> {
    const under = this.options.recreateUnder;
    if (under === undefined) return false;
    try {
      if (!(await stat(under)).isDirectory()) return false;
      await mkdir(this.dir, { recursive: true });
      return true;
    } catch {
      // The disk is not back (or not writable): the probe fails and is tried again at the next check.
      return false;
    }
  }

  /** Stops watching (the tier is closing). */
  close(): void {
    this.closed = true;
    this.unwatch();
  }

  private adopt(stats: Stats): void {
    this.identity = { dev: stats.dev, ino: stats.ino };
    if (this.options.watch) this.watch();
  }

  /** The directory's stats, or why it is not the directory files were created in. */
  private async observe(): Promise<Stats | string> {
    let stats: Stats;
    try {
      stats = await stat(this.dir);
    } catch (error) {
      const code = errnoCode(error);
      return code === 'ENOENT'
        ? `${this.dir} was removed`
        : `${this.dir} cannot be used (${code ?? String(error)})`;
    }
    if (!stats.isDirectory()) return `${this.dir} is no longer a directory`;
    const known = this.identity;
    if (
      this.failure === undefined &&
      known !== undefined &&
      (known.dev !== stats.dev || known.ino !== stats.ino)
    )
      return `${this.dir} was replaced by another directory`;
    return stats;
  }

  private fail(reason: string): void {
    if (this.failure !== undefined || this.closed) return;
    this.failure = reason;
    this.generation += 1;
    // The watched directory is gone; a recovery watches the new one.
    this.unwatch();
    this.options.onFailed(reason);
  }

  /**
   * Watches the directory itself (its removal or move arrives as an event named after it) and its parent (where
   * the removal, a move away or a replacement shows as an entry with the directory's name). Events about other
   * entries, such as a shuffle's sub-directory being created, are not about the root and cost nothing.
   */
  private watch(): void {
    this.unwatch();
    const name = path.basename(this.dir);
    const parent = path.dirname(this.dir);
    for (const dir of parent === this.dir ? [this.dir] : [this.dir, parent]) {
      try {
        const watcher = watch(dir, { persistent: false }, (_event, entry) => {
          if (entry === null || entry === name) this.check();
        });
        // A watcher whose directory vanished may report an error instead of an event.
        watcher.on('error', () => {
          watcher.close();
          this.check();
        });
        this.watchers.push(watcher);
      } catch {
        // Not watchable (an unsupported file system): the check before every create still finds a removal.
      }
    }
  }

  private unwatch(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
  }

  /** Runs one confirm at a time; events arriving meanwhile ask for one more, since they may be about a later change. */
  private check(): void {
    if (this.closed || this.failure !== undefined) return;
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = true;
    void this.confirm().finally(() => {
      this.checking = false;
      if (this.checkAgain) {
        this.checkAgain = false;
        this.check();
      }
    });
  }
}

interface Identity {
  readonly dev: number;
  readonly ino: number;
}
