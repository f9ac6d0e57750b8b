import assert from 'node:assert/strict';
import { startApplication, type Application } from '../client/application.ts';
import type { ClientLogger } from '../client/client-log.ts';
import { connectExecutor, type MapResult, type ShuffleClient } from '../client/shuffle-client.ts';
import type { ClientOptions } from '../client/client-config.ts';

/** A small shuffle for tests: every record names its map, attempt, partition and index, so a reader's output can be checked exactly. */
export interface SmallJob {
  readonly maps: number;
  readonly partitions: number;
  readonly recordsPerPartition: number;
  /** Bytes of each record (at least 24). */
  readonly recordBytes?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function recordOf(
  mapId: number,
  attemptId: number,
  partitionId: number,
  index: number,
  bytes = 32,
): Uint8Array {
  return encoder.encode(`m${mapId}a${attemptId}p${partitionId}r${index}`.padEnd(bytes, '.'));
}

export function recordsOf(job: SmallJob, mapId: number, attemptId: number): Uint8Array[][] {
  return Array.from({ length: job.partitions }, (_, p) =>
    Array.from({ length: job.recordsPerPartition }, (_, i) =>
      recordOf(mapId, attemptId, p, i, job.recordBytes),
    ),
  );
}

export interface ClientSide {
  readonly app: Application;
  readonly executor: ShuffleClient;
  close(): Promise<void>;
}

/** An application and one executor in this process, against the cluster at `master`. */
export async function clientSide(
  master: string,
  options: {
    release?: string;
    conf?: Record<string, string>;
    /** Where the client library's lines go (both the application and the executor), and from which level. */
    logger?: ClientLogger;
    logLevel?: ClientOptions['logLevel'];
  } = {},
): Promise<ClientSide> {
  const app = await startApplication({ master, ...options });
  const executor = connectExecutor({
    lifecycleManager: app.lifecycleManager,
    appId: app.appId,
    ...options,
    // With svc.auth.enabled the executor proves the application's secret, handed over as Spark hands its address.
    ...(app.secret === undefined ? {} : { secret: app.secret }),
  });
  return {
    app,
    executor,
    async close() {
      await executor.close();
      await app.close();
    },
  };
}

/** Writes every map of `job` (attempt 0 unless `attempts` says more) and returns each attempt's outcome. */
export async function writeMaps(
  client: ShuffleClient,
  shuffleId: number,
  job: SmallJob,
  attempts: (mapId: number) => readonly number[] = () => [0],
): Promise<Map<string, MapResult>> {
  const shuffle = client.shuffle(shuffleId, { maps: job.maps, partitions: job.partitions });
  const results = new Map<string, MapResult>();
  await Promise.all(
    Array.from({ length: job.maps }, (_, mapId) =>
      Promise.all(
        attempts(mapId).map(async (attemptId) => {
          const writer = shuffle.writer(mapId, attemptId);
          recordsOf(job, mapId, attemptId).forEach((records, p) =>
            records.forEach((r) => writer.write(p, r)),
          );
          results.set(`${mapId}/${attemptId}`, await writer.close());
        }),
      ),
    ),
  );
  return results;
}

/**
 * Checks that `winners` names exactly one winning attempt for each map of `job` and nothing else: a map whose every
 * attempt lost (or failed) would otherwise make its records expected nowhere, and its partitions read as correct.
 */
export function assertOneWinnerPerMap(job: SmallJob, winners: ReadonlyMap<number, number>): void {
  for (let mapId = 0; mapId < job.maps; mapId += 1) {
    assert.ok(
      winners.has(mapId),
      `map ${mapId} has no winning attempt (every attempt lost or failed); winners: ${JSON.stringify([...winners])}`,
    );
  }
  const strangers = [...winners.keys()].filter(
    (mapId) => !(Number.isInteger(mapId) && mapId >= 0 && mapId < job.maps),
  );
  assert.deepEqual(strangers, [], `winners of maps outside 0..${job.maps - 1}`);
}

/**
 * Reads every partition and checks it holds exactly the winning attempts' records, each once; every map must have
 * exactly one winning attempt (assertOneWinnerPerMap).
 */
export async function readAndVerify(
  client: ShuffleClient,
  shuffleId: number,
  job: SmallJob,
  winners: ReadonlyMap<number, number>,
): Promise<void> {
  assertOneWinnerPerMap(job, winners);
  const shuffle = client.shuffle(shuffleId, { maps: job.maps, partitions: job.partitions });
  for (let p = 0; p < job.partitions; p += 1) {
    const got = (await shuffle.read(p)).map((r) => decoder.decode(r)).sort();
    const expected = [...winners.entries()]
      .flatMap(([mapId, attemptId]) =>
        Array.from({ length: job.recordsPerPartition }, (_, i) =>
          decoder.decode(recordOf(mapId, attemptId, p, i, job.recordBytes)),
        ),
      )
      .sort();
    assert.deepEqual(got, expected, `partition ${p} holds other records than the winners wrote`);
  }
}

/** The winning attempt of each map from writeMaps' outcomes. */
export function winnersOf(results: ReadonlyMap<string, MapResult>): Map<number, number> {
  const winners = new Map<number, number>();
  for (const [key, result] of results) {
    if (result.outcome !== 'won') continue;
    const [mapId, attemptId] = key.split('/').map(Number) as [number, number];
    assert.equal(winners.has(mapId), false, `map ${mapId} has two winners`);
    winners.set(mapId, attemptId);
  }
  return winners;
}

/** Runs `job` as one application against the cluster at `master`: every map once, then every partition verified. */
export async function runVerifiedJob(
  master: string,
  job: SmallJob,
  options: { release?: string; conf?: Record<string, string> } = {},
): Promise<void> {
  const client = await clientSide(master, options);
  try {
    const results = await writeMaps(client.executor, 0, job);
    await readAndVerify(client.executor, 0, job, winnersOf(results));
  } finally {
    await client.close();
  }
}
