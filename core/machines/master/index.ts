export type { MasterConfig } from './config.ts';
export { masterMachine, MASTER_TIMERS } from './machine.ts';
export { initialMasterState, MASTER_STATE_KEY, type MasterDurableState, type MasterState } from './state.ts';
export { assembleDurable, durableLayout, MASTER_STATE_PREFIX } from './layout.ts';
