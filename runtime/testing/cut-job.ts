/**
 * The replicated job of the network-fault tests on namespace hosts (issue 34): maps written one at a time, so that a
 * fault can strike between two of them, and a look at where the application placed the copies, so that a test cuts
 * off a worker that holds data (and shows that it did).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import { workerKey, type PartitionLocation } from '../../core/domain/index.ts';
import { HostNetwork, type Side } from '../cluster/hosts.ts';
import { LocalCluster, type LocalClusterOptions } from '../cluster/local-cluster.ts';
import type { ClientLogger } from '../client/client-log.ts';
import type { MapResult } from '../client/shuffle-client.ts';
import { getJson } from '../http/testing/http-client.ts';
import { within } from './deadline.ts';
import { pollUntil } from './poll.ts';
import {
  clientSide,
  readAndVerify,
  recordsOf,
  winnersOf,
  type ClientSide,
  type SmallJob,
} from './small-job.ts';

export const CUT_JOB: SmallJob = { maps: 6, partitions: 12, recordsPerPartition: 40, recordBytes: 200 };

/** Writes map `mapId` (attempt 0) of `shuffleId` and returns its outcome under the key writeMaps uses. */
export async function writeMap(
  client: ClientSide,
  shuffleId: number,
  mapId: number,
  job: SmallJob = CUT_JOB,
): Promise<[string, MapResult]> {
  const writer = client.executor
    .shuffle(shuffleId, { maps: job.maps, partitions: job.partitions })
    .writer(mapId, 0);
  recordsOf(job, mapId, 0).forEach((records, p) => records.forEach((r) => writer.write(p, r)));
  return [`${mapId}/0`, await writer.close()];
}

/** Every copy (primaries and replicas, all epochs) the application has reserved for `shuffleId`. */
export function reservedCopies(client: ClientSide, shuffleId: number): readonly PartitionLocation[] {
  const shuffle = client.app.state().shuffles.get(shuffleId);
  assert.ok(shuffle !== undefined, `the application knows shuffle ${shuffleId}`);
  return shuffle.reserved;
}

/** How many reserved copies of `shuffleId` each of the cluster's workers holds, by worker index. */
export function copiesByWorker(cluster: LocalCluster, client: ClientSide, shuffleId: number): number[] {
  const copies = reservedCopies(client, shuffleId);
  return cluster.workerIds.map((id) => copies.filter((copy) => workerKey(copy.worker) === id).length);
}

/** The index of the worker holding the most copies of `shuffleId`; asserts that it holds some (the fault's target). */
export function workerWithMostCopies(cluster: LocalCluster, client: ClientSide, shuffleId: number): number {
  const held = copiesByWorker(cluster, client, shuffleId);
  const index = held.indexOf(Math.max(...held));
  assert.ok(held[index]! > 0, `the worker to cut holds copies of the shuffle: ${JSON.stringify(held)}`);
  return index;
}

/**
 * Writes the maps after map 0 and reads every partition, checking each holds exactly the records written, once;
 * resolves with the milliseconds from `since` to the verified end, and the winning attempt of each map.
 */
export async function finishAndVerify(
  client: ClientSide,
  shuffleId: number,
  first: ReadonlyMap<string, MapResult>,
  since: number,
  job: SmallJob = CUT_JOB,
): Promise<{ cost: number; winners: Map<number, number> }> {
  const results = new Map(first);
  for (let mapId = 1; mapId < job.maps; mapId += 1)
    results.set(...(await writeMap(client, shuffleId, mapId, job)));
  const winners = winnersOf(results);
  await readAndVerify(client.executor, shuffleId, job, winners);
  return { cost: Date.now() - since, winners };
}

/** A client logger that keeps the application's and executor's lines for a test to look at, each with its time (`at`). */
export function keptClientLines(): { logger: ClientLogger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const keep = (fields: Record<string, unknown>, msg: string): void =>
    void lines.push({ ...fields, msg, at: Date.now() });
  return { logger: { error: keep, warn: keep, info: keep, debug: keep }, lines };
}

/** The client's `transport.connectionClosed` lines that gave up on a silent peer at `address` (any port). */
export function silenceLines(
  lines: readonly Record<string, unknown>[],
  address: string,
): Record<string, unknown>[] {
  return lines.filter(
    (line) =>
      line.event === 'transport.connectionClosed' &&
      String(line.peer).startsWith(`${address}:`) &&
      String(line.reason).startsWith('silent for'),
  );
}

export interface FaultedJob {
  readonly client: ClientSide;
  /** The client library's lines (keptClientLines). */
  readonly lines: readonly Record<string, unknown>[];
  /** The worker the fault struck, and the copies each worker held when it struck. */
  readonly struck: number;
  readonly held: readonly number[];
  /** Milliseconds from the fault to the verified end of the job. */
  readonly cost: number;
  /** The winning attempt of each map (to read the shuffle again). */
  readonly winners: ReadonlyMap<number, number>;
}

/**
 * One application runs the replicated job as shuffle `shuffleId`: map 0 is written, `fault` strikes the worker
 * that holds the most copies (`target` picks another), then the other maps are written and every partition is
 * read and verified, all within `budgetMs` of the fault (a test deadline). The application is pushed on `clients`
 * for the caller to close.
 */
export async function verifyThroughFault(
  cluster: LocalCluster,
  options: {
    readonly conf: Record<string, string>;
    readonly shuffleId: number;
    /** Strikes worker `worker` of the cluster; `client` is the job's application (to look at its placement first). */
    readonly fault: (worker: number, client: ClientSide) => Promise<void>;
    readonly budgetMs: number;
    readonly clients: ClientSide[];
    readonly target?: (held: readonly number[]) => number;
    /** The client library's log level (default info). */
    readonly logLevel?: 'debug' | 'info';
  },
): Promise<FaultedJob> {
  const { logger, lines } = keptClientLines();
  const client = await clientSide(cluster.masterUrl, {
    conf: { 'svc.client.push.replicate.enabled': 'true', ...options.conf },
    logger,
    logLevel: options.logLevel ?? 'info',
  });
  options.clients.push(client);
  const first = new Map([await writeMap(client, options.shuffleId, 0)]);
  const held = copiesByWorker(cluster, client, options.shuffleId);
  const struck = options.target?.(held) ?? held.indexOf(Math.max(...held));
  assert.ok(held[struck]! > 0, `the worker the fault strikes holds copies: ${JSON.stringify(held)}`);
  await options.fault(struck, client);
  const since = Date.now();
  const { cost, winners } = await within(
    finishAndVerify(client, options.shuffleId, first, since),
    `the job to verify within ${options.budgetMs} ms of the fault on worker ${struck}`,
    options.budgetMs,
  );
  return { client, lines, struck, held, cost, winners };
}

interface WorkersView {
  readonly workers: readonly { readonly host: string }[];
  readonly lostWorkers: readonly unknown[];
  readonly excludedWorkers: readonly unknown[];
}

/**
 * Resolves once the master lists every worker of `cluster` as registered, none lost or excluded: after a fault
 * healed, the next test starts on a whole cluster (the state, not a pause).
 */
export async function clusterWhole(cluster: LocalCluster, timeoutMs = 60_000): Promise<void> {
  let last = '';
  await pollUntil(
    async () => {
      const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
      last = response.text;
      if (response.status !== 200) return false;
      const view = response.json as WorkersView;
      return (
        view.workers.length === cluster.workerIds.length &&
        view.lostWorkers.length === 0 &&
        view.excludedWorkers.length === 0
      );
    },
    () => `every worker registered again, none lost or excluded; the master lists ${last}`,
    { timeoutMs, intervalMs: 250 },
  );
}

/**
 * Resolves once every worker that gave up on a peer as silent (`transport.connectionClosed`, "silent for …") has
 * heard from it again (`transport.peerBack`, from the probes it sends a silent peer every ping interval). The
 * master listing every worker is not enough for the next test: a primary that still shuns a healed worker fails
 * its replica pushes to it at once, and a revive that passes over both that worker and the next test's cut one
 * finds no pair.
 */
export async function workersHearEachOther(cluster: LocalCluster, timeoutMs = 60_000): Promise<void> {
  for (const worker of cluster.workers) {
    if (worker === undefined) continue;
    const lines = worker.seen(() => true);
    const lastSilence = new Map<string, number>();
    const lastBack = new Map<string, number>();
    lines.forEach((line, index) => {
      const peer = String(line.peer);
      if (line.event === 'transport.connectionClosed' && String(line.reason).startsWith('silent for'))
        lastSilence.set(peer, index);
      else if (line.event === 'transport.peerBack') lastBack.set(peer, index);
    });
    for (const [peer, at] of lastSilence) {
      if ((lastBack.get(peer) ?? -1) > at) continue;
      await worker.waitFor(
        (line) => line.event === 'transport.peerBack' && String(line.peer) === peer,
        `the worker hearing again from ${peer}, which it gave up on as silent`,
        at,
        timeoutMs,
      );
    }
  }
}

/** The cluster a file's network-fault tests share, on namespace hosts (hostCluster). */
export interface HostCluster {
  readonly network: HostNetwork;
  readonly cluster: LocalCluster;
  /** Applications a test started: closed after it. */
  readonly clients: ClientSide[];
}

/**
 * Registers, in the enclosing describe, the hooks of one cluster shared by its tests: a master on host 0 and a
 * worker on each further host, started before the first test; after each test its applications are closed, every
 * fault healed, and the next test waits until the master lists every worker again (clusterWhole) and every worker
 * hears again from the peers it gave up on (workersHearEachOther); after the last, everything is stopped and the
 * hosts removed. A cluster start costs a minute and more on a loaded machine, and a
 * file must end within the runner's 300 s: two variants of about 25 s each share a cluster, no more.
 */
export function hostCluster(
  options: Pick<LocalClusterOptions, 'racks' | 'conf'> & { readonly workers: number },
): HostCluster {
  const shared: { network?: HostNetwork; cluster?: LocalCluster; clients: ClientSide[] } = { clients: [] };
  before(async () => {
    shared.network = await HostNetwork.create({ hosts: options.workers + 1 });
    shared.cluster = await LocalCluster.start({ ...options, hosts: shared.network });
  });
  afterEach(async () => {
    for (const client of shared.clients.splice(0)) await client.close().catch(() => undefined);
    await shared.network?.heal();
    if (shared.cluster !== undefined) {
      await clusterWhole(shared.cluster);
      await workersHearEachOther(shared.cluster);
    }
  });
  after(async () => {
    await shared.cluster?.stop();
    await shared.network?.destroy();
  });
  return {
    get network() {
      assert.ok(shared.network !== undefined, 'the hosts exist (before ran)');
      return shared.network;
    },
    get cluster() {
      assert.ok(shared.cluster !== undefined, 'the cluster runs (before ran)');
      return shared.cluster;
    },
    clients: shared.clients,
  };
}

/** Every side but worker `index`'s host: the master's host, the other workers' hosts and the root (the job). */
export function restOf(fixture: HostCluster, index: number): Side[] {
  const host = fixture.cluster.workerHost(index);
  return ['root', ...fixture.network.hosts.filter((other) => other !== host)];
}
