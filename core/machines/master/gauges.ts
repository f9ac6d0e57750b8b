import { registeredShuffleCount, workerCounts } from '../../lifecycle/index.ts';
import { gauge, setEntry } from '../outbox.ts';
import type { MasterOutbox } from './outbox.ts';
import type { MasterState } from './state.ts';

/**
 * The master's gauges under their contract names (WorkerCount, LostWorkerCount, ExcludedWorkerCount,
 * AvailableWorkerCount, ShutdownWorkerCount, DecommissionWorkerCount, RegisteredShuffleCount,
 * RunningApplicationCount, PartitionSize). Emitted after a step that changed the durable state, and only those whose
 * value moved, so that the metric stream stays proportional to what happens.
 */
export function emitGauges(s: MasterState, out: MasterOutbox): MasterState {
  const { workers, applications, estimatedPartitionSize } = s.durable;
  const values: Record<string, number> = {
    ...workerCounts(workers),
    RegisteredShuffleCount: registeredShuffleCount(applications),
    RunningApplicationCount: applications.apps.size,
    PartitionSize: estimatedPartitionSize,
  };
  let gauges = s.gauges;
  for (const [name, value] of Object.entries(values)) {
    if (gauges.get(name) === value) continue;
    gauge(out, name, value);
    gauges = setEntry(gauges, name, value);
  }
  return gauges === s.gauges ? s : { ...s, gauges };
}
