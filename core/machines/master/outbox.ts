import type { AppId, WorkerKey } from '../../domain/index.ts';
import type { ApplicationRegistry, WorkerRegistry } from '../../lifecycle/index.ts';
import type { Rng } from '../../rng.ts';
import type { Outbox } from '../outbox.ts';
import { nothingTouched, type KeyWrite, type Touched } from './layout.ts';
import type { MasterState } from './state.ts';

/**
 * The master's step outbox: the effects so far, plus what of the durable state the step changed and must persist
 * (./layout.ts): the workers and applications whose keys it rewrites, never a comparison of the whole state.
 */
export interface MasterOutbox extends Outbox {
  readonly touched: Touched;
  /** Writes decided outright, not from what was touched: a start's layout version, or its rewrite of an old store. */
  readonly rewrites: KeyWrite[];
}

export function newMasterOutbox(now: number, rng: Rng): MasterOutbox {
  return { now, rng, effects: [], touched: nothingTouched(), rewrites: [] };
}

/** The state with a new worker registry in which only `changed` differ, marked for persistence. */
export function withWorkers(
  s: MasterState,
  out: MasterOutbox,
  workers: WorkerRegistry,
  changed: Iterable<WorkerKey>,
): MasterState {
  for (const key of changed) out.touched.workers.add(key);
  return { ...s, durable: { ...s.durable, workers } };
}

/** The state with a new application registry in which only `changed` differ, marked for persistence. */
export function withApplications(
  s: MasterState,
  out: MasterOutbox,
  applications: ApplicationRegistry,
  changed: Iterable<AppId>,
): MasterState {
  for (const appId of changed) out.touched.apps.add(appId);
  return { ...s, durable: { ...s.durable, applications } };
}
