import { uniqueId, type PartitionLocation } from '../../../core/domain/index.ts';
import { STATE_POLICIES } from '../../../core/lifecycle/worker-states.ts';
import type { AdminCommand } from '../../../core/machines/effects.ts';
import type { WorkerMachineState } from '../../../core/machines/worker/index.ts';
import type { PartitionFile } from '../../../core/machines/worker/state.ts';
import { appConsumption } from '../../../core/machines/worker/consumption.ts';
import { diskInfos } from '../../../core/machines/worker/storage-view.ts';
import {
  addConsumption,
  consumptionOf,
  NO_CONSUMPTION,
  type ResourceConsumption,
} from '../../../core/quota/index.ts';
import type {
  ApplicationsResponse,
  PartitionLocationData,
  ShufflePartitionsResponse,
  ShufflesResponse,
  UnAvailablePeersResponse,
  WorkerInfoResponse,
  WorkerResourceConsumption,
} from './types.ts';
import { diskInfosData, slotsUsed, workerIdData, workerIdFromKey } from './workers.ts';

/**
 * The worker's machine state as the management interface shows it. Pure: each function reads the state and builds
 * a response. `isShutdown` and `isDecommissioning` are the lifecycle table's own facts about the current state
 * (core/lifecycle/worker-states.ts STATE_POLICIES); disks are what the worker reports to the master.
 */

/** The tenant the master gives an application whose client named none. */
const DEFAULT_TENANT = 'default';

/**
 * What this worker's live files hold, per user (`tenant/name`), each with its applications as
 * `subResourceConsumptions`: the figures its heartbeat reports, grouped by the user the application's client named
 * when it reserved slots here. Applications whose client named no user (an older client) are left out, as the
 * master leaves out applications it does not know.
 */
export function workerResourceConsumptions(
  state: WorkerMachineState,
): Record<string, WorkerResourceConsumption> {
  const userOf = new Map<string, string>();
  for (const shuffle of state.shuffles.values())
    if (shuffle.user !== undefined)
      userOf.set(shuffle.appId, `${shuffle.user.tenant ?? DEFAULT_TENANT}/${shuffle.user.name}`);
  const totals = new Map<string, ResourceConsumption>();
  const apps = new Map<string, Record<string, WorkerResourceConsumption>>();
  for (const entry of appConsumption(state)) {
    const name = userOf.get(entry.appId);
    if (name === undefined) continue;
    const own = consumptionOf(entry);
    totals.set(name, addConsumption(totals.get(name) ?? NO_CONSUMPTION, own));
    apps.set(name, { ...apps.get(name), [entry.appId]: own });
  }
  return Object.fromEntries(
    [...totals].map(([name, total]) => [name, { ...total, subResourceConsumptions: apps.get(name) ?? {} }]),
  );
}

/** GET /api/v1/workers on the worker. */
export function workerInfoResponse(state: WorkerMachineState): WorkerInfoResponse {
  const disks = diskInfos(state);
  const policy = STATE_POLICIES[state.lifecycle.state];
  const id = workerIdData(state.config.id);
  return {
    ...id,
    // svc has no separate internal port: traffic between the roles shares the rpc port.
    internalPort: id.rpcPort,
    slotUsed: slotsUsed(disks),
    diskInfos: diskInfosData(disks),
    resourceConsumptions: workerResourceConsumptions(state),
    workerState: state.lifecycle.state,
    workerStateStartTime: state.lifecycle.since,
    isRegistered: state.registration.status === 'registered',
    isShutdown: policy.isShutdown,
    isDecommissioning: policy.isDecommissioning,
  };
}

/** GET /api/v1/shuffles on the worker: the shuffles it holds files of. */
export function workerShufflesResponse(state: WorkerMachineState): ShufflesResponse {
  return { shuffleIds: [...state.shuffles.keys()] };
}

/** GET /api/v1/applications on the worker: the applications it holds shuffles of. */
export function workerApplicationsResponse(state: WorkerMachineState): ApplicationsResponse {
  return { applications: [...new Set([...state.shuffles.values()].map((shuffle) => shuffle.appId))] };
}

/** `host-rpcPort-pushPort-fetchPort-replicatePort`, as the reference's hostAndPorts. */
function hostAndPorts(location: Pick<PartitionLocation, 'worker'>): string {
  const id = location.worker;
  return `${id.host}-${id.rpcPort}-${id.pushPort}-${id.fetchPort}-${id.replicatePort}`;
}

function locationData(location: PartitionLocation): PartitionLocationData {
  return {
    idEpoch: uniqueId(location),
    hostAndPorts: hostAndPorts(location),
    mode: location.mode,
    ...(location.peer === undefined ? {} : { peer: hostAndPorts(location.peer) }),
    storage: location.storage.type,
  };
}

/**
 * A location is living while its file waits for a commit or destroy: the same files a graceful shutdown waits for
 * (core/machines/worker/files.ts uncommittedCount).
 */
function isLiving(file: PartitionFile): boolean {
  return file.status === 'open' || file.status === 'committing';
}

/** GET /api/v1/shuffles/partitions: living locations by shuffle key and unique id, primaries and replicas apart. */
export function workerPartitionsResponse(state: WorkerMachineState): ShufflePartitionsResponse {
  const primary: Record<string, Record<string, PartitionLocationData>> = {};
  const replica: Record<string, Record<string, PartitionLocationData>> = {};
  for (const [key, shuffle] of state.shuffles) {
    for (const file of shuffle.files.values()) {
      if (!isLiving(file)) continue;
      const side = file.location.mode === 'PRIMARY' ? primary : replica;
      (side[key] ??= {})[uniqueId(file.location)] = locationData(file.location);
    }
  }
  return { primaryPartitions: primary, replicaPartitions: replica };
}

/** GET /api/v1/workers/unavailable_peers: replica peers this worker failed to reach, with when. */
export function unavailablePeersResponse(state: WorkerMachineState): UnAvailablePeersResponse {
  return {
    peers: [...state.unavailablePeers].map(([key, since]) => ({
      worker: workerIdFromKey(key),
      timestamp: since,
    })),
  };
}

/** POST /api/v1/workers/exit {type}; absent: NONE (the configured default). The machine parses the type. */
export function exitCommand(body: { readonly type?: string } | undefined): AdminCommand {
  return { type: 'exit', exitType: body?.type ?? 'NONE' };
}

const TOP_APPS = 50;

/**
 * Bytes each application holds on this worker's local disks, largest first (at most 50): the legacy
 * /listTopDiskUsedApps of releases before 0.6.0, which removed it for a metrics query.
 */
export function workerDiskUse(
  state: WorkerMachineState,
): { readonly appId: string; readonly bytes: number }[] {
  const bytes = new Map<string, number>();
  for (const shuffle of state.shuffles.values()) {
    for (const file of shuffle.files.values()) {
      if (file.file.tier !== 'HDD' && file.file.tier !== 'SSD') continue;
      bytes.set(shuffle.appId, (bytes.get(shuffle.appId) ?? 0) + file.bytes);
    }
  }
  return [...bytes]
    .map(([appId, total]) => ({ appId, bytes: total }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, TOP_APPS);
}
