/**
 * Positions 0..size-1 on a ring, from which positions are removed (a worker whose budget is used up). Finds the first
 * live position at or after any position, wrapping around, in near-constant amortised time: each removed position
 * points further along and lookups halve those paths (union-find), so walking past used-up workers never costs a
 * full circle. This keeps an offer roughly linear in partitions + workers.
 *
 * A plain record and functions rather than a class: instances live for one offer only, and V8 forgets the hidden
 * classes of a class whose instances are all gone, so optimised code that used them would be thrown away after
 * every offer. A record built by one object literal keeps its hidden class.
 */
export interface LiveRing {
  readonly size: number;
  /** `ahead[i] === i` while i is live; otherwise a position further along to look at. `ahead[size]` is a sentinel. */
  readonly ahead: Int32Array;
  live: number;
}

/** A ring of `size` positions, all live. */
export function liveRing(size: number): LiveRing {
  const ahead = new Int32Array(size + 1);
  for (let i = 0; i <= size; i += 1) ahead[i] = i;
  return { size, ahead, live: size };
}

export function isLive(ring: LiveRing, position: number): boolean {
  return position < ring.size && ring.ahead[position] === position;
}

export function removeLive(ring: LiveRing, position: number): void {
  if (!isLive(ring, position)) return;
  ring.ahead[position] = position + 1;
  ring.live -= 1;
}

/** The first live position at or after `from`, wrapping around (`from` past the end means 0); -1 when none is live. */
export function nextLive(ring: LiveRing, from: number): number {
  if (ring.live === 0) return -1;
  const found = find(ring.ahead, from >= ring.size || from < 0 ? 0 : from);
  return found < ring.size ? found : find(ring.ahead, 0);
}

function find(ahead: Int32Array, position: number): number {
  let at = position;
  let next = ahead[at]!;
  while (next !== at) {
    const further = ahead[next]!;
    ahead[at] = further;
    at = next;
    next = further;
  }
  return at;
}
