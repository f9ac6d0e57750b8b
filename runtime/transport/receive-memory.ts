/** What the owner of a count learns: the bytes held now, after a connection's change. */
export type HeldChanged = (totalBytes: number) => void;

export interface ReceiveMemoryOptions {
  /**
   * The most bytes all partly received frames of the process may hold (read at each growth); a connection whose
   * frame would take the total past it is closed. Absent: no limit.
   */
  readonly limitBytes?: number | (() => number);
  /** The key that sets the limit, named in the reason a connection is closed with. */
  readonly limitKey?: string;
  /** Called after every change of the total. */
  readonly changed?: HeldChanged;
}

/**
 * The bytes a process holds for frames it has partly received, over all its connections: each connection tells
 * what its reader holds after every read, and gives it all back when it closes. A connection that would take the
 * total past the limit is closed (the master's svc.master.receive.maxPartialFrameBytes; on a worker, what its
 * memory budget has left); the worker also counts them in its back-pressure (docs/operations.md, "Limits and
 * hostile peers").
 */
export class ReceiveMemory<C extends object = object> {
  private readonly held = new Map<C, number>();
  private total = 0;

  constructor(private readonly options: ReceiveMemoryOptions = {}) {}

  get totalBytes(): number {
    return this.total;
  }

  /** `connection` now holds `bytes`; returns why it must be closed when that is past the limit. */
  update(connection: C, bytes: number): string | undefined {
    const before = this.held.get(connection) ?? 0;
    if (bytes === before) return undefined;
    const limit =
      typeof this.options.limitBytes === 'function' ? this.options.limitBytes() : this.options.limitBytes;
    if (limit !== undefined && bytes > before && this.total - before + bytes > limit) {
      const total = this.total - before + bytes;
      this.set(connection, before, 0);
      return (
        `the process would hold ${total} bytes of partly received frames, more than its limit of ${limit} ` +
        `(${this.options.limitKey ?? 'the limit'}): this connection's frame of ${bytes} bytes so far is refused`
      );
    }
    this.set(connection, before, bytes);
    return undefined;
  }

  /** The connection closed: what it held is free again. */
  release(connection: C): void {
    const before = this.held.get(connection);
    if (before !== undefined) this.set(connection, before, 0);
  }

  private set(connection: C, before: number, bytes: number): void {
    if (bytes === 0) this.held.delete(connection);
    else this.held.set(connection, bytes);
    this.total += bytes - before;
    if (bytes !== before) this.options.changed?.(this.total);
  }
}
