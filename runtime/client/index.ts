// The client library's one entry point, the package `@svc-shuffle/client`: everything an application uses,
// and nothing of the library's insides. docs/client.md documents it.
export {
  startApplication,
  type Application,
  type ApplicationOptions,
  type ShuffleRegistration,
} from './application.ts';
export {
  connectExecutor,
  type ChunkOptions,
  type ExecutorOptions,
  type MapResult,
  type MapWriter,
  type PartitionReader,
  type PartitionRecords,
  type ReadOptions,
  type Shuffle,
  type ShuffleClient,
  type ShuffleOptions,
  type ShuffleShape,
} from './shuffle-client.ts';
export type { ClientOptions } from './client-config.ts';
export type { ClientLogger } from './client-log.ts';
export {
  ApplicationRefusedError,
  AuthenticationFailedError,
  ClientClosedError,
  ClientReleaseRefusedError,
  MapTaskFailedError,
  QuotaExceededError,
  ReadAbortedError,
  ReadTimeoutError,
  ReduceTaskFailedError,
  RequestFailedError,
  ShuffleNotServedError,
  SvcArgumentError,
  SvcClientError,
} from './errors.ts';
export {
  bytes,
  hashPartitioner,
  json,
  keyValue,
  KEY_LENGTH_BYTES,
  murmur3,
  uint32,
  utf8,
  type Codec,
  type KeyValueCodec,
  type Partitioner,
} from './records.ts';
export { MAX_STAGE_ATTEMPT, SHUFFLE_ID_LIMIT, type ShuffleStage } from './stage-attempts.ts';
