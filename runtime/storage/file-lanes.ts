/**
 * Per-file ordering of I/O. Operations on one file run strictly in the order they were queued; operations on
 * different files run concurrently. This is how "as if each were issued alone, in order" (core/machines/effects.ts)
 * holds on a real disk, where calls complete in any order: a write must not overtake the create before it, nor a
 * create the delete before it (the disk probe deletes and recreates its file in one step).
 *
 * Within one file's queue two kinds of neighbours are merged, because the order among them cannot be observed:
 * consecutive appends are handed to the file in one call (one `writev` on a disk, instead of one system call and one
 * completion per 64 KiB push), and consecutive reads run concurrently.
 */

/** Appends every chunk, in order, at the end of the file; rejects with the failure of the whole call. */
export type AppendAll = (chunks: readonly Uint8Array[]) => Promise<void>;

type Task =
  | {
      readonly kind: 'append';
      /** One operation's chunks (a write of several batches is one task: it succeeds or fails as a whole). */
      readonly chunks: readonly Uint8Array[];
      readonly appendAll: AppendAll;
      readonly resolve: () => void;
      readonly reject: (error: unknown) => void;
    }
  /** `start` begins the work and returns a promise of its end that never rejects. */
  | { readonly kind: 'read' | 'exclusive'; readonly start: () => Promise<void> };

type AppendTask = Extract<Task, { kind: 'append' }>;

/** At most this many chunks or bytes per merged append: the system's iovec limit, and a bound on one call's time. */
const MAX_MERGED_CHUNKS = 1024;
const MAX_MERGED_BYTES = 64 * 1024 * 1024;

export class FileLanes {
  private readonly lanes = new Map<string, Task[]>();
  private idleWaiters: (() => void)[] = [];

  /**
   * Appends `chunks`, in order, after everything queued on `key` so far (possibly merged with the appends queued
   * right after it).
   */
  append(key: string, chunks: readonly Uint8Array[], appendAll: AppendAll): Promise<void> {
    return new Promise((resolve, reject) => {
      this.enqueue(key, { kind: 'append', chunks, appendAll, resolve, reject });
    });
  }

  /** Runs `read` after everything queued on `key` so far, alongside the reads queued right before and after it. */
  read<T>(key: string, read: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.enqueue(key, { kind: 'read', start: () => settle(read, resolve, reject) });
    });
  }

  /**
   * Runs `work` alone on every one of `keys`: after everything queued on each of them so far, and before anything
   * queued later. Tasks are queued on all their keys at once, so every lane sees the same order and two such tasks
   * can never wait on each other.
   */
  exclusive<T>(keys: readonly string[], work: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    return new Promise((resolve, reject) => {
      let waiting = unique.length;
      let release!: () => void;
      const ended = new Promise<void>((resolveEnded) => (release = resolveEnded));
      // Each lane holds at this task until the work has ended; the work starts when the last lane reached it.
      const start = (): Promise<void> => {
        waiting -= 1;
        if (waiting === 0) void settle(work, resolve, reject).then(release);
        return ended;
      };
      for (const key of unique) this.enqueue(key, { kind: 'exclusive', start });
    });
  }

  /** Whether anything is queued or running on any file: most of the time nothing, and `busy` needs a key built. */
  anyBusy(): boolean {
    return this.lanes.size > 0;
  }

  /** Whether anything is queued or running on `key`. */
  busy(key: string): boolean {
    return this.lanes.has(key);
  }

  /** Resolves once nothing is queued or running on any file. */
  idle(): Promise<void> {
    if (this.lanes.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private enqueue(key: string, task: Task): void {
    const queue = this.lanes.get(key);
    if (queue !== undefined) {
      queue.push(task);
      return;
    }
    const fresh = [task];
    this.lanes.set(key, fresh);
    void this.drain(key, fresh);
  }

  private async drain(key: string, queue: Task[]): Promise<void> {
    while (queue.length > 0) {
      const head = queue[0]!;
      if (head.kind === 'append') {
        const group = queue.splice(0, mergeableAppends(queue)) as AppendTask[];
        try {
          await head.appendAll(group.length === 1 ? head.chunks : group.flatMap((task) => task.chunks));
          for (const task of group) task.resolve();
        } catch (error) {
          for (const task of group) task.reject(error);
        }
      } else if (head.kind === 'read') {
        let count = 1;
        while (queue[count]?.kind === 'read') count += 1;
        await Promise.all(
          queue.splice(0, count).map((task) => (task as { start: () => Promise<void> }).start()),
        );
      } else {
        queue.shift();
        await head.start();
      }
    }
    this.lanes.delete(key);
    if (this.lanes.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

/** How many appends at the head of the queue go into one call. */
function mergeableAppends(queue: readonly Task[]): number {
  let count = 0;
  let chunks = 0;
  let bytes = 0;
  for (const task of queue) {
    if (
      task.kind !== 'append' ||
      (count > 0 && (chunks + task.chunks.length > MAX_MERGED_CHUNKS || bytes >= MAX_MERGED_BYTES))
    )
      break;
    count += 1;
    chunks += task.chunks.length;
    for (const chunk of task.chunks) bytes += chunk.length;
  }
  return count;
}

/** Runs `work` and hands its outcome to the promise's callbacks; the returned promise never rejects. */
async function settle<T>(
  work: () => Promise<T>,
  resolve: (value: T) => void,
  reject: (error: unknown) => void,
): Promise<void> {
  try {
    resolve(await work());
  } catch (error) {
    reject(error);
  }
}
