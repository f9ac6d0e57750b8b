import { once } from 'node:events';
import seedrandom from 'seedrandom';
import { nameReadAt } from '../../conf/registry/history.ts';
import { REGISTRY } from '../../conf/registry/registry.ts';
import type { Release } from '../../core/release/version.ts';
import { clientTierConf, type Tier } from '../cluster/local-cluster.ts';
import {
  connectExecutor,
  ReduceTaskFailedError,
  startApplication,
  type Application,
  type ClientLogger,
  type ShuffleClient,
} from '../client/index.ts';
import { recordOf } from '../testing/small-job.ts';

/** One job of the soak's stream, drawn from the seed and its position alone. */
export interface JobSpec {
  readonly index: number;
  readonly replicate: boolean;
  readonly tier: Tier;
  /** The release the job's client presents. */
  readonly release: Release;
  readonly maps: number;
  readonly partitions: number;
  readonly recordsPerPartition: number;
  readonly recordBytes: number;
}

/** Client releases the soak's jobs present: the current one most often, older ones the servers still admit. */
const RELEASES: readonly Release[] = ['0.6.0', '0.6.0', '0.6.0', '0.5.0', '0.4.0'];
const TIERS: readonly Tier[] = ['disk', 'memory', 'dfs'];

/** Job `index` of the stream of `seed`: the same seed gives the same jobs, whatever the faults did. */
export function jobSpec(
  seed: string,
  index: number,
  options: { replicateShare?: number; tiers?: readonly Tier[] } = {},
): JobSpec {
  const tiers = options.tiers === undefined || options.tiers.length === 0 ? TIERS : options.tiers;
  const random = seedrandom.alea(`${seed}:job:${index}`);
  const between = (low: number, high: number): number => Math.floor(low + random() * (high - low + 1));
  return {
    index,
    replicate: random() < (options.replicateShare ?? 0.7),
    tier: tiers[between(0, tiers.length - 1)]!,
    release: RELEASES[between(0, RELEASES.length - 1)]!,
    maps: between(2, 6),
    partitions: between(2, 10),
    recordsPerPartition: between(20, 400),
    recordBytes: between(32, 1024),
  };
}

/** The client settings of a job, under the names its release reads (an older client ignores a newer name). */
export function jobClientConf(spec: JobSpec): Record<string, string> {
  const at = (key: string): string => nameReadAt(REGISTRY.entry(key).entry, spec.release) ?? key;
  const conf: Record<string, string> = {};
  for (const [key, value] of Object.entries(clientTierConf(spec.tier))) conf[at(key)] = value;
  conf[at('svc.client.push.replicate.enabled')] = String(spec.replicate);
  return conf;
}

export type JobStatus = 'verified' | 'failed' | 'wrong-data';

export interface JobOutcome {
  readonly spec: JobSpec;
  readonly appId: string;
  /** ms from the soak's start. */
  readonly startMs: number;
  readonly endMs: number;
  readonly status: JobStatus;
  /** Each map or reduce attempt that failed, with its error: under a tolerated fault there must be none. */
  readonly taskFailures: readonly string[];
  /** Map stages rerun after a fetch failure (data lost with a worker: only when the job does not replicate). */
  readonly reruns: number;
  /** What the verification found: the partitions checked, or the first difference. */
  readonly verification: string;
  /** The client library's warnings and errors during the job. */
  readonly clientLog: readonly string[];
}

/** Attempts of a map or reduce task before the job fails (Spark's spark.task.maxFailures). */
const TASK_ATTEMPTS = 4;
/** Map stage reruns after fetch failures before the job fails (Spark's spark.stage.maxConsecutiveAttempts). */
const STAGE_ATTEMPTS = 4;
/** How long one partition's read may take under faults before it counts as failed. */
const READ_TIMEOUT_MS = 180_000;

const decoder = new TextDecoder();

/** Where a partition's records differ from the winners': missing, duplicated or foreign records, with examples. */
export function compareRecords(got: readonly string[], expected: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const record of expected) counts.set(record, (counts.get(record) ?? 0) + 1);
  const extra: string[] = [];
  for (const record of got) {
    const left = counts.get(record) ?? 0;
    if (left === 0) extra.push(record);
    else counts.set(record, left - 1);
  }
  const missing = [...counts].flatMap(([record, left]) => Array<string>(left).fill(record));
  if (missing.length === 0 && extra.length === 0) return undefined;
  const short = (list: string[]): string =>
    list
      .slice(0, 3)
      .map((r) => r.replace(/\.+$/, ''))
      .join(', ');
  return (
    `${got.length} records read, ${expected.length} expected; ${missing.length} missing` +
    (missing.length > 0 ? ` (${short(missing)})` : '') +
    `, ${extra.length} duplicated or foreign` +
    (extra.length > 0 ? ` (${short(extra)})` : '')
  );
}

/**
 * Runs one job as an application of its own against `master`, the way an engine would: every map (a failed attempt
 * retried with the next attempt id), then every partition read and compared record by record with what the
 * winning attempts wrote; a fetch failure reruns the map stage. Never throws: the outcome says what happened.
 */
export async function runJob(spec: JobSpec, master: string, clock: () => number): Promise<JobOutcome> {
  const startMs = clock();
  const clientLog: string[] = [];
  const taskFailures: string[] = [];
  const logger: ClientLogger = {
    warn: (fields: object, message?: string) =>
      clientLog.push(`WARN ${message ?? ''} ${JSON.stringify(fields)}`),
    error: (fields: object, message?: string) =>
      clientLog.push(`ERROR ${message ?? ''} ${JSON.stringify(fields)}`),
  };
  const options = { master, release: spec.release, conf: jobClientConf(spec), logger };
  let app: Application | undefined;
  let client: ShuffleClient | undefined;
  let appId = `(job ${spec.index} not registered)`;
  const outcome = (status: JobStatus, verification: string, reruns: number): JobOutcome => ({
    spec,
    appId,
    startMs,
    endMs: clock(),
    status,
    taskFailures,
    reruns,
    verification,
    clientLog: clientLog.slice(-30),
  });
  try {
    app = await startApplication(options);
    appId = app.appId;
    client = connectExecutor({
      lifecycleManager: app.lifecycleManager,
      appId: app.appId,
      ...options,
      ...(app.secret === undefined ? {} : { secret: app.secret }),
    });
    let stageAttempt = 0;
    for (let stage = 0; stage < STAGE_ATTEMPTS; stage += 1) {
      const shuffle = client.shuffle(
        0,
        { maps: spec.maps, partitions: spec.partitions },
        stageAttempt === 0 ? {} : { stageAttempt },
      );
      const winners = new Map<number, number>();
      for (let mapId = 0; mapId < spec.maps; mapId += 1) {
        const winner = await writeMap(spec, shuffle, mapId, taskFailures);
        if (winner === undefined)
          return outcome('failed', `map ${mapId} failed ${TASK_ATTEMPTS} attempts`, stage);
        winners.set(mapId, winner);
      }
      const read = await readAll(spec, shuffle, winners, taskFailures);
      if (read.kind === 'verified') return outcome('verified', read.text, stage);
      if (read.kind === 'wrong-data') return outcome('wrong-data', read.text, stage);
      if (read.kind === 'failed') return outcome('failed', read.text, stage);
      // Data lost with a worker: the engine reruns the map stage, as Spark does on a FetchFailedException.
      stageAttempt = (await app.rerunMapStage(0)).stageAttempt;
    }
    return outcome('failed', `${STAGE_ATTEMPTS} map stages lost their data`, STAGE_ATTEMPTS);
  } catch (error) {
    taskFailures.push(`job: ${describe(error)}`);
    return outcome('failed', `the job stopped: ${describe(error)}`, 0);
  } finally {
    await client?.close().catch((error: unknown) => clientLog.push(`close executor: ${describe(error)}`));
    await app?.close().catch((error: unknown) => clientLog.push(`close application: ${describe(error)}`));
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Writes map `mapId`, retrying with the next attempt id; the winning attempt, or undefined if all failed. */
async function writeMap(
  spec: JobSpec,
  shuffle: ReturnType<ShuffleClient['shuffle']>,
  mapId: number,
  failures: string[],
): Promise<number | undefined> {
  for (let attemptId = 0; attemptId < TASK_ATTEMPTS; attemptId += 1) {
    try {
      const writer = shuffle.writer(mapId, attemptId);
      for (let p = 0; p < spec.partitions; p += 1) {
        for (let i = 0; i < spec.recordsPerPartition; i += 1) {
          if (!writer.write(p, recordOf(mapId, attemptId, p, i, spec.recordBytes)))
            await once(writer, 'drain');
        }
      }
      const result = await writer.close();
      if (result.outcome === 'won') return attemptId;
      failures.push(`map ${mapId} attempt ${attemptId} lost (no other attempt ran)`);
    } catch (error) {
      failures.push(`map ${mapId} attempt ${attemptId}: ${describe(error)}`);
    }
  }
  return undefined;
}

type ReadResult =
  | { readonly kind: 'verified' | 'wrong-data' | 'failed'; readonly text: string }
  | { readonly kind: 'fetch-failure'; readonly text: string };

/** Reads every partition (retrying a failed read) and compares it with the winners' records. */
async function readAll(
  spec: JobSpec,
  shuffle: ReturnType<ShuffleClient['shuffle']>,
  winners: ReadonlyMap<number, number>,
  failures: string[],
): Promise<ReadResult> {
  let records = 0;
  for (let p = 0; p < spec.partitions; p += 1) {
    const expected = [...winners].flatMap(([mapId, attemptId]) =>
      Array.from({ length: spec.recordsPerPartition }, (_, i) =>
        decoder.decode(recordOf(mapId, attemptId, p, i, spec.recordBytes)),
      ),
    );
    let read: string[] | undefined;
    for (let attempt = 0; attempt < TASK_ATTEMPTS && read === undefined; attempt += 1) {
      try {
        const got: string[] = [];
        for await (const record of shuffle.reader(p, { timeoutMs: READ_TIMEOUT_MS }))
          got.push(decoder.decode(record));
        read = got;
      } catch (error) {
        failures.push(`read of partition ${p} attempt ${attempt}: ${describe(error)}`);
        if (error instanceof ReduceTaskFailedError && error.kind === 'fetch-failure')
          return { kind: 'fetch-failure', text: `partition ${p}: ${describe(error)}` };
        if (error instanceof ReduceTaskFailedError && error.kind === 'integrity')
          return { kind: 'wrong-data', text: `partition ${p}: ${describe(error)}` };
      }
    }
    if (read === undefined) return { kind: 'failed', text: `partition ${p} failed ${TASK_ATTEMPTS} reads` };
    const difference = compareRecords(read, expected);
    if (difference !== undefined) return { kind: 'wrong-data', text: `partition ${p}: ${difference}` };
    records += read.length;
  }
  return { kind: 'verified', text: `${spec.partitions} partitions, ${records} records, each exactly once` };
}
