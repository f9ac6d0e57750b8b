/** Keys of the client library (lifecycle manager and shuffle client) inside a batch or stream engine job. */
import { CLIENT, compatibilityOnly, type KeySpec } from '../spec.ts';

function askTimeout(request: string, what: string): KeySpec {
  return {
    key: `svc.client.rpc.${request}.askTimeout`,
    type: 'time',
    roles: CLIENT,
    description:
      `Time to wait for the reply to ${what}, each try (a task tries 3 times before it fails). Unset, it falls ` +
      'back as the client’s release did: to svc.rpc.io.connectionTimeout before 0.4.1, to svc.rpc.askTimeout from 0.4.1.',
  };
}

export const CLIENT_KEYS: readonly KeySpec[] = [
  {
    key: 'svc.client.push.replicate.enabled',
    type: 'boolean',
    aliases: [{ key: 'svc.push.replicate.enabled', deprecatedIn: '0.3.0' }],
    roles: CLIENT,
    description: 'Whether every partition is written to two workers (primary and replica).',
  },
  {
    key: 'svc.client.push.buffer.max.size',
    type: 'bytes',
    default: '64k',
    min: 1,
    roles: CLIENT,
    description: 'Data of a partition a client buffers before pushing it.',
  },
  {
    key: 'svc.client.push.merge.maxSize',
    type: 'bytes',
    default: '2m',
    min: 1,
    roles: CLIENT,
    description:
      'svc addition: the most frame bytes one PushMergedData carries. The batches a map task pushes at once to ' +
      'the same primary and replica travel merged up to this size (a larger batch travels alone); each merged ' +
      'push costs the worker one message and one answer instead of one per batch.',
  },
  {
    key: 'svc.client.push.maxInFlightPerPartition',
    type: 'int',
    default: '8',
    min: 1,
    roles: CLIENT,
    description:
      'svc addition: batches of one partition a map task keeps pushed and not yet answered. 1 waits for each ' +
      'answer before the next batch of the partition; more keep the worker busy while answers travel (readers ' +
      'order batches by id, so the order in which they land does not matter). Bounds the bytes a map task has ' +
      'in flight to this many batches per partition.',
  },
  {
    key: 'svc.client.push.maxUnacknowledgedBytes',
    type: 'bytes',
    default: '64m',
    min: 1,
    since: '0.6.0',
    roles: CLIENT,
    description:
      'svc addition: memory one map task holds for its batches (every buffer at its capacity: open batches, and ' +
      'frames until acknowledged) before its writer pushes back (`write()` returns false until `drain`). Reaching ' +
      'it also pushes the task’s largest partial batches; a partial batch the map has not written to while it ' +
      'wrote an eighth of it to other partitions is pushed too (twice as much, up to all of it, each time the map ' +
      'writes again to a partition it pushed that way). The writer also pushes back while an eighth of it waits ' +
      'in batches not yet sent (behind full per-partition windows), so that batches go while still in the CPU’s ' +
      'caches. Bounds a map task’s memory whatever it writes; clients before 0.6.0 use the same 64m. An executor ' +
      'keeps up to as much again of the batch and staging buffers its tasks let go, for its next tasks (let go ' +
      'after 30 s without a map task).',
  },
  {
    key: 'svc.client.push.revive.maxRetries',
    type: 'int',
    default: '5',
    min: 0,
    roles: CLIENT,
    description: 'Revives a map task may ask for before its push fails.',
  },
  {
    key: 'svc.client.push.revive.interval',
    type: 'time',
    default: '100ms',
    roles: CLIENT,
    effect: compatibilityOnly(
      'a map task sends revives as failures arise; the lifecycle manager batches them (svc.client.shuffle.batchHandleChangePartition.interval)',
    ),
    description: 'Interval at which a client sends its pending revive requests as one batch.',
  },
  {
    key: 'svc.client.push.revive.batchSize',
    type: 'int',
    default: '2048',
    min: 1,
    roles: CLIENT,
    effect: compatibilityOnly(
      'a map task sends revives as failures arise; the lifecycle manager batches them (svc.client.shuffle.batchHandleChangePartition.interval)',
    ),
    description: 'Most revive requests sent in one batch.',
  },
  {
    key: 'svc.client.push.excludeWorkerOnFailure.enabled',
    type: 'boolean',
    default: 'false',
    roles: CLIENT,
    description: 'Whether a worker that failed a push (connection, timeout) is excluded by the client.',
  },
  {
    key: 'svc.client.excludePeerWorkerOnFailure.enabled',
    type: 'boolean',
    default: 'true',
    roles: CLIENT,
    description: 'Whether a replica worker that failed is excluded along with reviving its partition.',
  },
  {
    key: 'svc.client.excludedWorker.expireTimeout',
    type: 'time',
    default: '180s',
    roles: CLIENT,
    description: 'How long a client keeps a worker it excluded for a failure.',
  },
  {
    key: 'svc.client.application.heartbeatInterval',
    type: 'time',
    default: '10s',
    roles: CLIENT,
    description: 'Interval of the application’s heartbeats to the master.',
  },
  {
    key: 'svc.client.reserveSlots.maxRetries',
    type: 'int',
    default: '3',
    min: 0,
    roles: CLIENT,
    description: 'Retries of a slot reservation on other workers after a worker refused it.',
  },
  {
    key: 'svc.client.reserveSlots.retryWait',
    type: 'time',
    default: '3s',
    roles: CLIENT,
    effect: compatibilityOnly('a refused reservation is retried in the next round at once'),
    description: 'Wait before retrying a refused slot reservation.',
  },
  {
    key: 'svc.client.reserveSlots.rackaware.enabled',
    type: 'boolean',
    default: 'false',
    roles: CLIENT,
    description: 'Whether a partition’s replica is placed on another rack than its primary.',
  },
  {
    key: 'svc.client.slot.assign.maxWorkers',
    type: 'int',
    default: '10000',
    min: 1,
    since: '0.3.1',
    roles: CLIENT,
    description: 'Most workers the client asks the master to spread one shuffle over.',
  },
  {
    key: 'svc.client.shuffle.register.filterExcludedWorker.enabled',
    type: 'boolean',
    default: 'false',
    since: '0.4.0',
    roles: CLIENT,
    description: 'Whether the client asks the master not to offer slots on the workers it excluded.',
  },
  {
    key: 'svc.client.shuffle.batchHandleChangePartition.enabled',
    type: 'boolean',
    default: 'true',
    roles: CLIENT,
    effect: compatibilityOnly('the lifecycle manager always handles revives in batches'),
    description: 'Whether the lifecycle manager handles revive requests in batches.',
  },
  {
    key: 'svc.client.shuffle.batchHandleChangePartition.interval',
    type: 'time',
    default: '100ms',
    roles: CLIENT,
    description: 'Interval at which the lifecycle manager handles pending revive requests.',
  },
  {
    key: 'svc.client.shuffle.batchHandleChangePartition.threads',
    type: 'int',
    default: '8',
    min: 1,
    roles: CLIENT,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads of the lifecycle manager handling revive requests.',
  },
  {
    key: 'svc.client.shuffle.batchHandleChangePartition.partitionBuckets',
    type: 'int',
    default: '256',
    min: 1,
    roles: CLIENT,
    effect: compatibilityOnly('the lifecycle manager runs on one event loop and takes no locks'),
    description: 'Lock buckets that revive requests are spread over by partition id.',
  },
  {
    key: 'svc.client.shuffle.dynamicResourceEnabled',
    type: 'boolean',
    default: 'false',
    roles: CLIENT,
    effect: compatibilityOnly(
      'a revive places partitions on the shuffle’s surviving workers and never asks the master for more',
    ),
    description: 'Whether a revive asks the master for new workers when too few of the shuffle’s are usable.',
  },
  {
    key: 'svc.client.shuffle.dynamicResourceFactor',
    type: 'double',
    default: '0.5',
    min: 0,
    max: 1,
    roles: CLIENT,
    effect: compatibilityOnly(
      'a revive places partitions on the shuffle’s surviving workers and never asks the master for more',
    ),
    description: 'Share of unusable workers from which a revive asks the master for new ones.',
  },
  {
    key: 'svc.client.shuffle.partitionSplit.threshold',
    type: 'bytes',
    default: '1g',
    min: 1,
    roles: CLIENT,
    description: 'Size from which a partition file is split.',
  },
  {
    key: 'svc.client.shuffle.partitionSplit.mode',
    type: 'enum',
    values: ['SOFT', 'HARD'],
    default: 'SOFT',
    roles: CLIENT,
    description:
      'SOFT: a split partition keeps accepting data until the new location is ready; HARD: it refuses at once.',
  },
  {
    key: 'svc.client.shuffle.mapPartition.split.enabled',
    type: 'boolean',
    default: 'false',
    roles: CLIENT,
    effect: compatibilityOnly('svc has no MapPartition shuffle type'),
    description: 'Whether MapPartition shuffles split large partitions.',
  },
  {
    key: 'svc.client.fetch.maxReqsInFlight',
    type: 'int',
    default: '4',
    min: 1,
    roles: CLIENT,
    description:
      'svc addition (the reference has the same name): chunks a reduce task fetches ahead of its consumer: asked ' +
      'for, arrived, or handed out and not yet consumed. A reader holds at most this many chunks ' +
      '(svc.shuffle.chunk.size each, plus at most one batch), whatever the size of its partition.',
  },
  askTimeout('getReducerFileGroup', 'a reducer asking where its partition files are'),
  askTimeout('registerShuffle', 'registering a shuffle'),
  askTimeout('requestPartition', 'a revive (a request for a new partition location)'),
  {
    key: 'svc.client.spark.stageRerun.enabled',
    type: 'boolean',
    roles: CLIENT,
    description: 'Whether lost shuffle data makes the batch engine rerun the stage that wrote it.',
  },
  {
    key: 'svc.client.spark.shuffle.fallback.policy',
    type: 'enum',
    values: ['AUTO', 'ALWAYS', 'NEVER'],
    default: 'AUTO',
    translateFrom: { 'svc.client.spark.shuffle.forceFallback.enabled': { true: 'ALWAYS', false: 'AUTO' } },
    roles: CLIENT,
    description:
      'When the batch engine uses its own shuffle instead of svc: AUTO when svc cannot serve (no worker to offer, ' +
      'the client’s release refused, the user over quota), ALWAYS without asking svc, NEVER (the shuffle fails ' +
      'then). `Application.registerShuffle` answers with the decision (docs/client.md).',
  },
  {
    key: 'svc.client.push.splitPartition.threads',
    type: 'int',
    default: '8',
    min: 1,
    roles: CLIENT,
    effect: compatibilityOnly('svc runs each process on one event loop; thread counts do not apply'),
    description: 'Threads handling split partitions.',
  },
  {
    key: 'svc.client.flink.inputGate.minMemory',
    type: 'bytes',
    default: '8m',
    roles: CLIENT,
    effect: compatibilityOnly('svc has no stream-engine client'),
    description: 'Stream engine: least memory of an input gate.',
  },
  {
    key: 'svc.client.flink.resultPartition.minMemory',
    type: 'bytes',
    default: '8m',
    roles: CLIENT,
    effect: compatibilityOnly('svc has no stream-engine client'),
    description: 'Stream engine: least memory of a result partition.',
  },
];
