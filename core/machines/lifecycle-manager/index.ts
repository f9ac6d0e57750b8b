export type { LifecycleManagerConfig } from './config.ts';
export { lifecycleManagerMachine } from './machine.ts';
export {
  initialLifecycleManagerState,
  type AppRegistration,
  type LifecycleManagerState,
  type LmShuffle,
  type ShufflePhase,
} from './state.ts';
