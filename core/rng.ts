/**
 * Randomness is an input. The runtime passes a generator seeded from the OS, the simulator one seeded from the run's
 * seed; core code draws only through this interface, so the same draws always give the same decisions.
 */
export interface Rng {
  /** A uniform draw in [0, 1). */
  next(): number;
}

/** A uniform integer in [0, bound). `bound` must be a positive integer. */
export function randomInt(rng: Rng, bound: number): number {
  if (!Number.isInteger(bound) || bound <= 0)
    throw new RangeError(`randomInt bound must be a positive integer, got ${bound}`);
  return Math.min(bound - 1, Math.floor(rng.next() * bound));
}

/** An Rng that replays a fixed list of draws, cycling; for tests and for shrinking recorded runs. */
export function replayRng(draws: readonly number[]): Rng {
  let i = 0;
  return {
    next() {
      if (draws.length === 0) return 0;
      const value = draws[i % draws.length]!;
      i += 1;
      return value;
    },
  };
}
