/**
 * Response shapes of the management interface, as TypeScript types: the schemas openapi-typescript generates from
 * openapi/svc-master-v1.yaml and openapi/svc-worker-v1.yaml (clients/openapi, the typed client's own types), so that
 * a projection that drifts from its document (a field renamed, missing or added) fails the typecheck. What is written
 * here is only which of a schema's optional fields svc always fills (`Filled`, checked against the schema's own
 * field names). The tests also validate every response against the documents at run time.
 */
import type { components as MasterComponents } from '../../../clients/openapi/master-v1.ts';
import type { components as WorkerComponents } from '../../../clients/openapi/worker-v1.ts';

type Master = MasterComponents['schemas'];
type Worker = WorkerComponents['schemas'];

/** The schema `T` with its optional fields `K` present: svc always fills them. */
type Filled<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };

/** The schema `T` with field `K` present as `V`, a narrower form of the schema's own (its items filled). */
type FilledAs<T, K extends keyof T, V extends NonNullable<T[K]>> = Omit<T, K> & { [P in K]-?: V };

export type ConfigData = Master['ConfigData'];
export type ConfResponse = Filled<Master['ConfResponse'], 'configs'>;
export type DynamicConfigData = Filled<Master['DynamicConfig'], 'level' | 'desc' | 'configs'>;
export type DynamicConfigResponse = FilledAs<Master['DynamicConfigResponse'], 'configs', DynamicConfigData[]>;
export type ThreadStack = Master['ThreadStack'];
export type EventLoopDelay = Filled<
  Master['EventLoopDelay'],
  'stddevMs' | 'p50Ms' | 'p90Ms' | 'p99Ms' | 'resolutionMs'
>;
export type ThreadStackResponse = Master['ThreadStackResponse'];
export type ShufflesResponse = Filled<Master['ShufflesResponse'], 'shuffleIds'>;
export type WorkerIdData = Master['WorkerId'];
export type WorkerData = Master['WorkerData'];
export type WorkerResourceConsumption = Master['WorkerResourceConsumption'];
export type WorkerTimestampData = Master['WorkerTimestampData'];
export type WorkersResponse = Filled<
  Master['WorkersResponse'],
  'lostWorkers' | 'excludedWorkers' | 'manualExcludedWorkers' | 'shutdownWorkers' | 'decommissioningWorkers'
>;
export type WorkerEventData = Master['WorkerEventData'];
export type WorkerEventsResponse = Filled<Master['WorkerEventsResponse'], 'workerEvents'>;
export type ApplicationsHeartbeatResponse = Master['ApplicationsHeartbeatResponse'];
export type HostnamesResponse = Master['HostnamesResponse'];
export type MasterInfoResponse = Filled<Master['MasterInfoResponse'], 'masterCommitInfo'>;
export type HandleResponse = Filled<Master['HandleResponse'], 'message'>;
export type ApplicationsResponse = Worker['ApplicationsResponse'];
export type WorkerInfoResponse = Filled<
  Worker['WorkerInfoResponse'],
  'slotUsed' | 'diskInfos' | 'workerState' | 'workerStateStartTime'
>;
export type PartitionLocationData = Filled<
  Worker['PartitionLocationData'],
  'idEpoch' | 'hostAndPorts' | 'mode' | 'storage'
>;
/** shuffle key → unique id (`id-epoch`) → location. */
export type ShufflePartitionLocations = Record<string, Record<string, PartitionLocationData>>;
export type ShufflePartitionsResponse = FilledAs<
  FilledAs<Worker['ShufflePartitionsResponse'], 'primaryPartitions', ShufflePartitionLocations>,
  'replicaPartitions',
  ShufflePartitionLocations
>;
export type UnAvailablePeersResponse = Filled<Worker['UnAvailablePeersResponse'], 'peers'>;
/** The body of every error response. */
export type ErrorResponse = Master['ErrorResponse'];
