/**
 * The simulator's agenda: a binary min-heap ordered by (time, insertion sequence). Two events at the same virtual
 * time run in the order they were scheduled, so a run never depends on how the heap happens to break ties.
 */
export interface Scheduled<E> {
  readonly time: number;
  readonly seq: number;
  readonly event: E;
}

export class EventQueue<E> {
  private readonly heap: Scheduled<E>[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  /** Schedules `event` at virtual time `time` (milliseconds); returns its sequence number. */
  push(time: number, event: E): number {
    if (!Number.isFinite(time)) throw new RangeError(`cannot schedule an event at time ${time}`);
    const seq = this.nextSeq++;
    const heap = this.heap;
    heap.push({ time, seq, event });
    let i = heap.length - 1;
    const item = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(item, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = item;
    return seq;
  }

  /** The earliest event, without removing it. */
  peek(): Scheduled<E> | undefined {
    return this.heap[0];
  }

  /** Removes and returns the earliest event. */
  pop(): Scheduled<E> | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      const n = heap.length;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
        const c = heap[child]!;
        if (!before(c, last)) break;
        heap[i] = c;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }

  clear(): void {
    this.heap.length = 0;
  }
}

function before<E>(a: Scheduled<E>, b: Scheduled<E>): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
