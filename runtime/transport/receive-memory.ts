/** What the owner of a count learns: the bytes held now, after a connection's change. */
export type HeldChanged = (totalBytes: number) => void;

export interface ReceiveMemoryOptions {
  /**
   * The most bytes all partly received frames of the process may hold; a connection whose frame would take the
   * total past it is closed. Absent: no limit (the worker bounds them through its back-pressure instead).
   */
  readonly limitBytes?: number;
  /** The key that sets the limit, named in the reason a connection is closed with. */
  readonly limitKey?: string;
  /** Called after every change of the total. */
  readonly changed?: HeldChanged;
}

/**
 * The bytes a process holds for frames it has partly received, over all its connections: each connection tells
 * what its reader holds after every read, and gives it all back when it closes. The worker counts them in its
 * memory budget and back-pressure; the master closes the connection that would take it past its limit
 * (docs/operations.md, "Limits and hostile peers").
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
    const limit = this.options.limitBytes;
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

  /** The connection holding the most, and how much (undefined when none holds anything). */
  largest(): { readonly connection: C; readonly bytes: number } | undefined {
    let best: { connection: C; bytes: number } | undefined;
    for (const [connection, bytes] of this.held) {
      if (best === undefined || bytes > best.bytes) best = { connection, bytes };
    }
    return best;
  }

  private set(connection: C, before: number, bytes: number): void {
    if (bytes === 0) this.held.delete(connection);
    else this.held.set(connection, bytes);
    this.total += bytes - before;
    if (bytes !== before) this.options.changed?.(this.total);
  }
}
