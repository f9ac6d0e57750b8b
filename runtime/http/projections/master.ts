import { shuffleKey, workerKey, type WorkerId, type WorkerKey } from '../../../core/domain/index.ts';
import {
  applicationHostnames,
  decommissioningWorkers,
  excludedWorkers,
  lastKnownWorker,
  lostWorkers,
  manuallyExcludedWorkers,
  registeredWorkers,
  shutdownWorkers,
  workerEvents,
  type WorkerRegistry,
} from '../../../core/lifecycle/index.ts';
import type { AdminCommand } from '../../../core/machines/effects.ts';
import type { MasterState } from '../../../core/machines/master/index.ts';
import type {
  ApplicationsHeartbeatResponse,
  HostnamesResponse,
  MasterInfoResponse,
  ShufflesResponse,
  WorkerData,
  WorkerEventsResponse,
  WorkerResourceConsumption,
  WorkersResponse,
} from './types.ts';
import { workerData, workerIdData } from './workers.ts';
import {
  addConsumption,
  consumptionOf,
  NO_CONSUMPTION,
  userKey,
  type ResourceConsumption,
} from '../../../core/quota/index.ts';

/**
 * The master's machine state as the management interface shows it. Pure: each function reads the state (and the
 * time, for elapsed seconds) and builds a response; none decides anything. The lists come from the registry's own
 * views (core/lifecycle/registry-views.ts).
 */

/** A worker named by a set (excluded, shutdown, ...): its last known details if the master has them, else its id. */
function memberData(registry: WorkerRegistry, id: WorkerId, now: number | undefined): WorkerData {
  const known = lastKnownWorker(registry, workerKey(id));
  return known === undefined ? workerIdData(id) : workerData(known, now);
}

/**
 * What a worker's last heartbeat reported, per user (`tenant/name`), each with its applications as
 * `subResourceConsumptions`: the usage quotas are decided from (core/quota). Applications the master does not know
 * (no user) are left out.
 */
export function resourceConsumptionsOf(
  state: MasterState,
  key: WorkerKey,
): Record<string, WorkerResourceConsumption> {
  const totals = new Map<string, ResourceConsumption>();
  const apps = new Map<string, Record<string, WorkerResourceConsumption>>();
  for (const entry of state.quota.reports.get(key) ?? []) {
    const user = state.durable.applications.apps.get(entry.appId)?.user;
    if (user === undefined) continue;
    const name = userKey(user);
    const own = consumptionOf(entry);
    totals.set(name, addConsumption(totals.get(name) ?? NO_CONSUMPTION, own));
    apps.set(name, { ...apps.get(name), [entry.appId]: own });
  }
  return Object.fromEntries(
    [...totals].map(([name, total]) => [name, { ...total, subResourceConsumptions: apps.get(name) ?? {} }]),
  );
}

/**
 * GET /api/v1/workers on the master. `now` undefined: `state` is the one stored in etcd (a follower of a group),
 * without the facts only heartbeats bring (seconds since each one, the resource consumption they report): those
 * fields are left out rather than shown as zero.
 */
export function workersResponse(state: MasterState, now: number | undefined): WorkersResponse {
  const registry = state.durable.workers;
  const members = (ids: readonly WorkerId[]): WorkerData[] => ids.map((id) => memberData(registry, id, now));
  return {
    workers: registeredWorkers(registry).map((worker) => ({
      ...workerData(worker, now),
      ...(now === undefined
        ? {}
        : { resourceConsumptions: resourceConsumptionsOf(state, workerKey(worker.id)) }),
    })),
    lostWorkers: lostWorkers(registry).map((lost) => ({
      worker: workerData(lost.worker, now),
      timestamp: lost.lostAt,
    })),
    excludedWorkers: members(excludedWorkers(registry)),
    manualExcludedWorkers: members(manuallyExcludedWorkers(registry)),
    shutdownWorkers: members(shutdownWorkers(registry)),
    decommissioningWorkers: members(decommissioningWorkers(registry)),
  };
}

/** GET /api/v1/workers/events: the events sent and not yet completed by their worker. */
export function workerEventsResponse(state: MasterState, now: number | undefined): WorkerEventsResponse {
  const registry = state.durable.workers;
  return {
    workerEvents: workerEvents(registry).map((event) => ({
      worker: memberData(registry, event.worker, now),
      event: { eventType: event.eventType, eventTime: event.eventTime },
    })),
  };
}

/** GET /api/v1/applications on the master. */
export function applicationsResponse(state: MasterState): ApplicationsHeartbeatResponse {
  return {
    applications: [...state.durable.applications.apps].map(([appId, record]) => ({
      appId,
      lastHeartbeatTimestamp: record.lastHeartbeat,
    })),
  };
}

/** GET /api/v1/shuffles on the master: every registered shuffle, as `appId-shuffleId`. */
export function shufflesResponse(state: MasterState): ShufflesResponse {
  return {
    shuffleIds: [...state.durable.applications.apps].flatMap(([appId, record]) =>
      record.shuffles.map((id) => shuffleKey(appId, id)),
    ),
  };
}

/**
 * GET /api/v1/applications/hostnames: the hosts of the running applications' lifecycle managers, as they
 * registered them (svc registers the host with the application; the reference records it at RequestSlots).
 */
export function hostnamesResponse(state: MasterState): HostnamesResponse {
  return { hostnames: applicationHostnames(state.durable.applications) };
}

/** Facts about the master process itself, which are not machine state: its node id and control-plane address. */
export interface MasterSelf {
  readonly nodeId: string;
  /** `host:port` of the control plane (rpc). */
  readonly rpcAddress: string;
  /** The group of masters this one belongs to (svc.master.ha.enabled), as it knows it now; absent: a single master. */
  readonly group?: () => MasterGroupView;
}

/** What a member of a master group knows of its group (runtime/process/master-leadership.ts). */
export interface MasterGroupView {
  /** The group's name: its etcd key prefix. */
  readonly groupId: string;
  /** The leader as the election last named it; null while none is known. */
  readonly leader: { readonly id: string; readonly address: string } | null;
  /** The etcd revision this member last saw (the election's report, or its own term's). */
  readonly revision: number;
  readonly members: readonly {
    readonly id: string;
    /** `host:port` of the member's data port (svc.master.ha.node.<id>.host/port). */
    readonly address: string;
    /** `host:port` of its internal port (svc.master.ha.node.<id>.internal.port). */
    readonly internalAddress: string;
    /** LEADER, FOLLOWER (this member, not leading) or UNKNOWN (another member that does not lead). */
    readonly role: 'LEADER' | 'FOLLOWER' | 'UNKNOWN';
  }[];
}

/** GET /api/v1/masters: the group as this member knows it; a single master is a group of one, leading. */
export function mastersResponse(self: MasterSelf): MasterInfoResponse {
  if (self.group !== undefined) return groupResponse(self.group());
  return {
    groupId: `standalone-${self.nodeId}`,
    leader: { id: self.nodeId, address: self.rpcAddress },
    masterCommitInfo: [
      {
        commitIndex: 0,
        id: self.nodeId,
        address: self.rpcAddress,
        clientAddress: self.rpcAddress,
        startUpRole: 'LEADER',
      },
    ],
  };
}

/**
 * A group in the reference's shape: the etcd revision stands where the reference has its Raft commit index, the
 * member's data port for its client address, its internal port for its peer address.
 */
export function groupResponse(group: MasterGroupView): MasterInfoResponse {
  return {
    groupId: group.groupId,
    ...(group.leader === null ? {} : { leader: group.leader }),
    masterCommitInfo: group.members.map((member) => ({
      commitIndex: group.revision,
      id: member.id,
      address: member.internalAddress,
      clientAddress: member.address,
      startUpRole: member.role,
    })),
  };
}

// -----------------------------------------------------------------------------------------------------------
// Requests → operator commands (the machine decides; these only translate)

export interface WorkerIdBody {
  readonly host: string;
  readonly rpcPort: number;
  readonly pushPort: number;
  readonly fetchPort: number;
  readonly replicatePort: number;
}

export function keysOf(ids: readonly WorkerIdBody[] | undefined): WorkerKey[] {
  return (ids ?? []).map((id) => workerKey(id));
}

/** POST /api/v1/workers/exclude {add, remove}. */
export function excludeCommand(body: {
  readonly add?: readonly WorkerIdBody[];
  readonly remove?: readonly WorkerIdBody[];
}): AdminCommand {
  return { type: 'excludeWorkers', add: keysOf(body.add), remove: keysOf(body.remove) };
}

/** POST /api/v1/workers/events {eventType, workers}; the machine parses the type (any case). */
export function workerEventCommand(body: {
  readonly eventType: string;
  readonly workers: readonly WorkerIdBody[];
}): AdminCommand {
  return { type: 'workerEvent', eventType: body.eventType, workers: keysOf(body.workers) };
}
