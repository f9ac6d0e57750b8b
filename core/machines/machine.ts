import type { Rng } from '../rng.ts';
import type { Effect, Input } from './effects.ts';

/** What one step of a state machine decides: the next state and the effects for the driver to execute, in order. */
export interface Step<S> {
  readonly state: S;
  readonly effects: readonly Effect[];
}

/**
 * A role as a pure state machine: `(state, input, now, rng) -> (state', effects)`. The same machine runs under the
 * runtime (real sockets, disks, clock) and the simulator (virtual everything); neither adds decisions of its own.
 *
 * Ownership: the machine owns its state. A step may update the state it was given in place (its maps, sets and
 * arrays) and return it, or a new object sharing parts of it; the caller hands each step the state the previous step
 * returned and must not keep, read or reuse an older state after a step (as with quinn-proto's sans-IO
 * `Connection`). To compare before and after, copy what you need first. Outsiders (drivers, checkers, tests) read
 * the current state only, and never change it. Steps stay deterministic: the same state, input, time and random
 * draws give the same next state and effects. Why: copying a map on every update made the worker's state updates
 * quadratic in the files it holds and dominated the simulator (docs/core.md, "Machines").
 */
export interface Machine<S, I = Input> {
  step(state: S, input: I, now: number, rng: Rng): Step<S>;
}
