import type { ApplicationRegistry, WorkerRegistry } from '../../lifecycle/index.ts';
import type { Rng } from '../../rng.ts';
import type { Outbox } from '../outbox.ts';
import type { MasterState } from './state.ts';

/** The master's step outbox: the effects so far, plus whether the durable state changed and must be persisted. */
export interface MasterOutbox extends Outbox {
  durableChanged: boolean;
}

export function newMasterOutbox(now: number, rng: Rng): MasterOutbox {
  return { now, rng, effects: [], durableChanged: false };
}

/** The state with a new worker registry, marked for persistence. */
export function withWorkers(s: MasterState, out: MasterOutbox, workers: WorkerRegistry): MasterState {
  out.durableChanged = true;
  return { ...s, durable: { ...s.durable, workers } };
}

/** The state with a new application registry, marked for persistence. */
export function withApplications(
  s: MasterState,
  out: MasterOutbox,
  applications: ApplicationRegistry,
): MasterState {
  out.durableChanged = true;
  return { ...s, durable: { ...s.durable, applications } };
}
