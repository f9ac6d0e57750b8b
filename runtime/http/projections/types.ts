/**
 * Response shapes of the management interface, as TypeScript types. They mirror the component schemas of
 * openapi/svc-master-v1.yaml and openapi/svc-worker-v1.yaml (the tests validate every response against those), and
 * only the fields svc fills in are listed.
 */

export interface ConfigData {
  readonly name: string;
  readonly value: string;
}

export interface ConfResponse {
  readonly configs: readonly ConfigData[];
}

export interface DynamicConfigData {
  readonly level: 'SYSTEM' | 'TENANT' | 'TENANT_USER';
  readonly desc: string;
  readonly configs: readonly ConfigData[];
}

export interface DynamicConfigResponse {
  readonly configs: readonly DynamicConfigData[];
}

export interface ThreadStack {
  readonly threadId: number;
  readonly threadName: string;
  readonly threadState: string;
  readonly stackTrace: readonly string[];
  readonly inNative?: boolean;
}

export interface EventLoopDelay {
  readonly minMs: number;
  readonly maxMs: number;
  readonly meanMs: number;
  readonly stddevMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly resolutionMs: number;
}

export interface ThreadStackResponse {
  readonly threadStacks: readonly ThreadStack[];
  readonly eventLoopDelay?: EventLoopDelay;
}

export interface ShufflesResponse {
  readonly shuffleIds: readonly string[];
}

export interface WorkerIdData {
  readonly host: string;
  readonly rpcPort: number;
  readonly pushPort: number;
  readonly fetchPort: number;
  readonly replicatePort: number;
}

export interface WorkerData extends WorkerIdData {
  readonly slotUsed?: number;
  readonly lastHeartbeatTimestamp?: number;
  readonly heartbeatElapsedSeconds?: number;
  readonly diskInfos?: Readonly<Record<string, string>>;
  readonly workerState?: string;
  readonly workerStateStartTime?: number;
  readonly networkLocation?: string;
}

export interface WorkerTimestampData {
  readonly worker: WorkerData;
  readonly timestamp: number;
}

export interface WorkersResponse {
  readonly workers: readonly WorkerData[];
  readonly lostWorkers: readonly WorkerTimestampData[];
  readonly excludedWorkers: readonly WorkerData[];
  readonly manualExcludedWorkers: readonly WorkerData[];
  readonly shutdownWorkers: readonly WorkerData[];
  readonly decommissioningWorkers: readonly WorkerData[];
}

export interface WorkerEventData {
  readonly worker: WorkerData;
  readonly event: { readonly eventType: string; readonly eventTime: number };
}

export interface WorkerEventsResponse {
  readonly workerEvents: readonly WorkerEventData[];
}

export interface ApplicationsHeartbeatResponse {
  readonly applications: readonly { readonly appId: string; readonly lastHeartbeatTimestamp: number }[];
}

export interface HostnamesResponse {
  readonly hostnames: readonly string[];
}

export interface MasterInfoResponse {
  readonly groupId: string;
  readonly leader: { readonly id: string; readonly address: string };
  readonly masterCommitInfo: readonly {
    readonly commitIndex: number;
    readonly id: string;
    readonly address: string;
    readonly clientAddress: string;
    readonly startUpRole: string;
  }[];
}

export interface HandleResponse {
  readonly success: boolean;
  readonly message: string;
}

export interface ApplicationsResponse {
  readonly applications: readonly string[];
}

export interface WorkerInfoResponse extends WorkerIdData {
  readonly internalPort: number;
  readonly slotUsed: number;
  readonly diskInfos: Readonly<Record<string, string>>;
  readonly workerState: string;
  readonly workerStateStartTime: number;
  readonly isRegistered: boolean;
  readonly isShutdown: boolean;
  readonly isDecommissioning: boolean;
}

export interface PartitionLocationData {
  readonly idEpoch: string;
  readonly hostAndPorts: string;
  readonly mode: 'PRIMARY' | 'REPLICA';
  readonly peer?: string;
  readonly storage: string;
}

/** shuffle key → unique id (`id-epoch`) → location. */
export type ShufflePartitionLocations = Readonly<
  Record<string, Readonly<Record<string, PartitionLocationData>>>
>;

export interface ShufflePartitionsResponse {
  readonly primaryPartitions: ShufflePartitionLocations;
  readonly replicaPartitions: ShufflePartitionLocations;
}

export interface UnAvailablePeersResponse {
  readonly peers: readonly WorkerTimestampData[];
}

/** The body of every error response. */
export interface ErrorResponse {
  readonly message: string;
}
