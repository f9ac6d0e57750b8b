import seedrandom from 'seedrandom';
import type { Rng } from '../../core/rng.ts';

/**
 * The run's only source of randomness. Each purpose (the network, one node's machine, one disk, the fault plan, the
 * workload) draws from its own stream, seeded with `<seed>:<purpose>`, so an extra draw in one place never shifts
 * the draws of another: a run stays comparable when a fault is removed while shrinking. Alea is seedrandom's fastest
 * generator and passes the usual statistical batteries; cryptographic quality is irrelevant here.
 */
export function streamRng(seed: number | string, purpose: string): Rng {
  // Alea's generator reads its state from a closure, not from `this`, so it can be the method itself (no wrapper:
  // the TypeScript loader names every closure it sees created, which costs more than the draw).
  return { next: seedrandom.alea(`${seed}:${purpose}`) };
}

/**
 * The same stream as `streamRng(seed, purpose)`, seeded at its first draw. Every node of a run gets a stream of its
 * own, and most never draw from it (a standard seed starts ≈ 820 task processes, few of which draw): seeding Alea
 * hashes the seed text, ≈ 1.5 % of a standard seed when every node's stream was seeded at once.
 */
export class LazyStream implements Rng {
  private stream: Rng | undefined;

  constructor(
    private readonly seed: number | string,
    private readonly purpose: string,
  ) {}

  next(): number {
    this.stream ??= streamRng(this.seed, this.purpose);
    return this.stream.next();
  }
}

/** True with probability `p` (p ≤ 0 never draws, so disabling a fault leaves its stream untouched). */
export function chance(rng: Rng, p: number): boolean {
  if (p <= 0) return false;
  return rng.next() < p;
}

/** A uniform draw in [low, high). */
export function uniform(rng: Rng, low: number, high: number): number {
  return low + (high - low) * rng.next();
}

/** A log-uniform draw in [low, high): every order of magnitude is as likely as any other (swarm rates). */
export function logUniform(rng: Rng, low: number, high: number): number {
  if (low <= 0 || high <= low) throw new RangeError(`logUniform needs 0 < low < high, got ${low}, ${high}`);
  return Math.exp(uniform(rng, Math.log(low), Math.log(high)));
}

/** An exponential draw with the given mean (latency jitter, time between faults). */
export function exponential(rng: Rng, mean: number): number {
  return -mean * Math.log(1 - rng.next());
}

/** One element of a non-empty list. */
export function pick<T>(rng: Rng, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick from an empty list');
  return items[Math.min(items.length - 1, Math.floor(rng.next() * items.length))]!;
}
