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
 */
export interface Machine<S, I = Input> {
  step(state: S, input: I, now: number, rng: Rng): Step<S>;
}
