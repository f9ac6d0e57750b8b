export type { WorkerConfig, WorkerDiskConfig } from './config.ts';
export { workerMachine } from './machine.ts';
export { RECOVERY_KEY_PREFIX, recoveryKey } from './recovery.ts';
export { initialWorkerState, type WorkerMachineState } from './state.ts';
