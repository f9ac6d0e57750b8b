// Test support: machine states and a stand-in driver for management interfaces built in-process (fastify inject).
import {
  masterConfigFrom,
  resolveConfig,
  workerConfigFrom,
  type ResolvedConfig,
} from '../../../conf/index.ts';
import { DEFAULT_RACK, type WorkerId } from '../../../core/domain/index.ts';
import type { AdminCommand } from '../../../core/machines/effects.ts';
import { initialMasterState, type MasterState } from '../../../core/machines/master/index.ts';
import { initialWorkerState, type WorkerMachineState } from '../../../core/machines/worker/index.ts';
import { masterNodeId } from '../../../core/protocol/node-ids.ts';
import type { Release } from '../../../core/release/version.ts';
import type { AdminAnswer } from '../../driver/node-driver.ts';
import type { MachinePort } from '../machine-port.ts';

export const WORKER_ID: WorkerId = {
  host: 'w1',
  rpcPort: 1001,
  pushPort: 1002,
  fetchPort: 1003,
  replicatePort: 1004,
};

export function confAt(role: 'master' | 'worker', release: Release, overrides: Record<string, string> = {}) {
  return resolveConfig({ role, release, overrides });
}

export function masterStateAt(conf: ResolvedConfig): MasterState {
  return { ...initialMasterState(masterConfigFrom(conf, { dfs: false })), started: true };
}

export function workerStateAt(conf: ResolvedConfig): WorkerMachineState {
  const current = resolveConfig({ role: 'worker' });
  return {
    ...initialWorkerState(
      workerConfigFrom(conf, current, {
        id: WORKER_ID,
        master: masterNodeId(),
        networkLocation: DEFAULT_RACK,
        disks: [{ mountPoint: '/mnt/disk1', type: 'HDD', capacityBytes: 1 << 30 }],
        distributed: [],
        memoryCapacityBytes: 0,
      }),
    ),
    started: true,
  };
}

/** A driver that holds a fixed state and answers every command with `answer`, recording the commands. */
export class StubDriver<S> implements MachinePort<S> {
  readonly commands: AdminCommand[] = [];

  constructor(
    public state: S,
    private readonly answer: AdminAnswer = { success: true, message: 'done' },
  ) {}

  admin(command: AdminCommand): Promise<AdminAnswer> {
    this.commands.push(command);
    return Promise.resolve(this.answer);
  }
}
