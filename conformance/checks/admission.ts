/**
 * The client admission matrix (contract section 1, rules 6 and 7) and the storage of revived partitions (rules 3, 4
 * and 5), checked from outside: clients of each release, run through the published client library, against the
 * target deployment. The expectations are written here from the contract; nothing of core/release is imported.
 */
import { randomBytes } from 'node:crypto';
import {
  ClientReleaseRefusedError,
  connectExecutor,
  startApplication,
  type Application,
  type ShuffleClient,
} from '../../runtime/client/index.ts';
import type { Check, RuleRow, Target, Verdict } from '../report/row.ts';
import { withDeadline } from './deadline.ts';

/** The contract's words for each rule this module checks (section 1, "Behaviour rules stated"). */
export const SECTION_1_RULES = {
  3:
    'A client from release 0.6.0 on honours the client setting svc.storage.availableTypes. A revived partition ' +
    'location then no longer defaults to memory storage.',
  4:
    'A client before 0.6.0 defaults a revived partition to memory storage. If a worker has memory storage enabled, ' +
    'such a client can therefore use memory storage for an application that did not enable it.',
  5:
    'When the create-file order list of a partition has no entry for the storage type in question, index 0 is ' +
    'used as the index. This applies in two cases: (a) a partition revived by an older client that selected the ' +
    'memory tier as default; (b) an evicted file, whose own storage type is excluded from the order list.',
  6:
    'From 0.4.0 on, master/worker do not accept clients older than 0.3.0. Using the same version for client, ' +
    'master and worker is strongly recommended in production.',
  7: 'A 0.2 client works against a 0.3 master/worker. The upgrade order is master and worker first, then clients.',
} as const;

/** One client release of each line the issue names: 0.2.0, 0.3.x, 0.4.x, 0.5.x and 0.6.0. */
export const DEFAULT_CLIENT_RELEASES = ['0.2.0', '0.3.0', '0.4.1', '0.5.1', '0.6.0'] as const;

export type ExpectedAdmission = 'accept' | 'refuse' | 'either';

export interface AdmissionExpectation {
  readonly expect: ExpectedAdmission;
  /** The rule that decides it, in the contract's words or as read from them. */
  readonly because: string;
}

type Triple = readonly [number, number, number];

/** `0.5`, `0.5.1` or `v0.5.1` as three numbers; throws on anything else. */
export function releaseParts(text: string): Triple {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (match === null) throw new RangeError(`'${text}' is not a release (major.minor[.patch])`);
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export function compareReleaseText(a: string, b: string): number {
  const pa = releaseParts(a);
  const pb = releaseParts(b);
  for (let i = 0; i < 3; i += 1) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

/**
 * What the contract says of a client of `client` against masters and workers of `server`:
 * - rule 6: from 0.4.0 on, clients older than 0.3.0 are refused;
 * - rule 7: a 0.2 client works against 0.3 servers, and servers are upgraded before clients, so a client older than
 *   its servers (and not refused by rule 6) is accepted;
 * - a client newer than its servers is the upgrade done in the wrong order (rule 7): the contract does not say it
 *   works, so either answer conforms, provided a refusal is clean (at the handshake, nothing written).
 */
export function expectedAdmission(server: string, client: string): AdmissionExpectation {
  if (compareReleaseText(server, '0.4.0') >= 0 && compareReleaseText(client, '0.3.0') < 0) {
    return { expect: 'refuse', because: `rule 6: ${SECTION_1_RULES[6].split('. ')[0]}` };
  }
  if (compareReleaseText(client, server) > 0) {
    return {
      expect: 'either',
      because:
        'rule 7 orders upgrades servers first, then clients; the contract does not say a client newer than its ' +
        'servers works, so a clean refusal conforms as well as a working shuffle',
    };
  }
  if (compareReleaseText(client, server) === 0) {
    return { expect: 'accept', because: 'rules 6 and 7: client and servers of the same release' };
  }
  return {
    expect: 'accept',
    because:
      compareReleaseText(client, '0.3.0') < 0
        ? 'rule 7: a 0.2 client works against a 0.3 master/worker (rule 6 refuses it only from 0.4.0)'
        : 'rules 6 and 7: servers are upgraded first, and from 0.4.0 only clients older than 0.3.0 are refused',
  };
}

/** The storage a revived partition location should carry, by the client's release (rules 3 and 4). */
export function expectedReviveStorage(
  client: string,
  availableTypes: readonly string[],
): { readonly storage: string; readonly rule: 3 | 4 } {
  return compareReleaseText(client, '0.6.0') >= 0
    ? { storage: availableTypes[0] ?? 'HDD', rule: 3 }
    : { storage: 'MEMORY', rule: 4 };
}

export interface AdmissionOptions {
  /** Client releases to present; default DEFAULT_CLIENT_RELEASES. */
  readonly clients?: readonly string[];
  /** Provoke a revive (a split by a small client split threshold) in each accepted shuffle; default true. */
  readonly revive?: boolean;
  /** Deadline of each client's whole run, ms; default 120 s. */
  readonly timeoutMs?: number;
}

/** The shuffle each accepted client runs: map 0 writes past the split threshold into partition 0 (a revive). */
const SHUFFLE = { maps: 2, partitions: 3, recordsPerPartition: 40, recordBytes: 64 } as const;
const BIG_PARTITION_RECORDS = 1_600; // 1,600 × 64 B = 100 KiB into partition 0 from map 0: past the threshold
const SPLIT_THRESHOLD = '16k';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function recordText(tag: string, map: number, partition: number, index: number): string {
  return `${tag}/m${map}/p${partition}/r${index}`.padEnd(SHUFFLE.recordBytes, '.');
}

function recordCount(map: number, partition: number, revive: boolean): number {
  return revive && map === 0 && partition === 0 ? BIG_PARTITION_RECORDS : SHUFFLE.recordsPerPartition;
}

/**
 * The master URL as a client of `client` writes it: the scheme changed from `rss://` to `svc://` in 0.3.0 (contract
 * 9.3), so an older client is handed `rss://` for the same host and port.
 */
export function masterUrlFor(client: string, dataUrl: string): string {
  const hostPort = dataUrl.replace(/^[a-z]+:\/\//i, '');
  return `${compareReleaseText(client, '0.3.0') < 0 ? 'rss' : 'svc'}://${hostPort}`;
}

function basicAuth(target: Target): Record<string, string> {
  if (target.auth === undefined) return {};
  const token = Buffer.from(`${target.auth.user}:${target.auth.password}`).toString('base64');
  return { authorization: `Basic ${token}` };
}

async function getText(
  target: Target,
  url: string,
): Promise<{ readonly status: number; readonly body: string } | { readonly error: string }> {
  try {
    const response = await fetch(url, { headers: basicAuth(target), signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** The listings of applications and shuffles a node of `release` serves (`/api/v1` from 0.6.0, legacy before). */
function listingPaths(release: string, role: 'master' | 'worker'): readonly string[] {
  if (compareReleaseText(release, '0.6.0') >= 0) return ['/api/v1/applications', '/api/v1/shuffles'];
  // `/shuffles` was renamed `/shuffle` in 0.5.0 (contract 4.4); try both so a mis-named release is still read.
  return role === 'master'
    ? ['/applications', '/shuffle', '/shuffles']
    : ['/applications', '/shuffle', '/shuffles'];
}

interface Trace {
  /** Listings read, and whether they named the application. */
  readonly read: string[];
  readonly mentions: string[];
}

/** Reads every listing of the deployment and notes each that names `appId`. */
async function traceOf(target: Target, appId: string): Promise<Trace> {
  const trace: Trace = { read: [], mentions: [] };
  const nodes = [
    { base: target.masterUrl, role: 'master' as const },
    ...target.workerUrls.map((base) => ({ base, role: 'worker' as const })),
  ];
  for (const node of nodes) {
    for (const path of listingPaths(target.release, node.role)) {
      const answer = await getText(target, `${node.base}${path}`);
      if ('error' in answer || answer.status !== 200) continue;
      trace.read.push(`GET ${node.base}${path}`);
      if (answer.body.includes(appId)) trace.mentions.push(`GET ${node.base}${path} names ${appId}`);
    }
  }
  return trace;
}

/** Living partition locations a worker lists: its shuffle key, `id-epoch`, storage, primary or replica. */
export interface ListedLocation {
  readonly worker: string;
  readonly shuffleKey: string;
  readonly partitionId: number;
  readonly epoch: number;
  readonly storage: string;
  readonly side: 'primary' | 'replica';
}

function locationOf(
  worker: string,
  side: 'primary' | 'replica',
  shuffleKey: string,
  idEpoch: string,
  storage: string,
): ListedLocation | undefined {
  const match = /^(\d+)-(\d+)$/.exec(idEpoch);
  if (match === null) return undefined;
  return { worker, shuffleKey, partitionId: Number(match[1]), epoch: Number(match[2]), storage, side };
}

/** `/api/v1/shuffles/partitions` (JSON, from 0.6.0) or the legacy `/listPartitionLocationInfo` text. */
export function parsePartitions(worker: string, body: string, json: boolean): ListedLocation[] {
  const found: ListedLocation[] = [];
  if (json) {
    const parsed = JSON.parse(body) as Record<string, Record<string, Record<string, { storage?: unknown }>>>;
    for (const [field, side] of [
      ['primaryPartitions', 'primary'],
      ['replicaPartitions', 'replica'],
    ] as const) {
      for (const [shuffleKey, locations] of Object.entries(parsed[field] ?? {})) {
        for (const [idEpoch, location] of Object.entries(locations)) {
          const at = locationOf(worker, side, shuffleKey, idEpoch, String(location.storage));
          if (at !== undefined) found.push(at);
        }
      }
    }
    return found;
  }
  for (const line of body.split('\n')) {
    const match = /^\s*(primary|replica)\s+(\S+)\s+(\S+)\s+(\S+)/.exec(line);
    if (match === null) continue;
    const at = locationOf(worker, match[1] as 'primary' | 'replica', match[2]!, match[3]!, match[4]!);
    if (at !== undefined) found.push(at);
  }
  return found;
}

async function listedLocations(
  target: Target,
  appId: string,
): Promise<{ readonly locations: ListedLocation[]; readonly read: string[] }> {
  const json = compareReleaseText(target.release, '0.6.0') >= 0;
  const path = json ? '/api/v1/shuffles/partitions' : '/listPartitionLocationInfo';
  const locations: ListedLocation[] = [];
  const read: string[] = [];
  for (const worker of target.workerUrls) {
    const answer = await getText(target, `${worker}${path}`);
    if ('error' in answer || answer.status !== 200) continue;
    read.push(`GET ${worker}${path}`);
    try {
      locations.push(
        ...parsePartitions(worker, answer.body, json).filter((l) => l.shuffleKey.startsWith(`${appId}-`)),
      );
    } catch {
      // an unreadable listing counts as not read
      read.pop();
    }
  }
  return { locations, read };
}

async function writeMap(client: ShuffleClient, appTag: string, map: number, revive: boolean): Promise<void> {
  const shuffle = client.shuffle(0, { maps: SHUFFLE.maps, partitions: SHUFFLE.partitions });
  const writer = shuffle.writer(map, 0);
  for (let p = 0; p < SHUFFLE.partitions; p += 1) {
    for (let i = 0; i < recordCount(map, p, revive); i += 1) {
      if (!writer.write(p, encoder.encode(recordText(appTag, map, p, i)))) {
        await new Promise<void>((resolve) => writer.once('drain', () => resolve()));
      }
    }
  }
  const result = await writer.close();
  if (result.outcome !== 'won') throw new Error(`map ${map} attempt 0 ended ${result.outcome}, not won`);
}

/** Reads every partition and returns the first difference from what the maps wrote, or undefined. */
async function verifyAll(
  client: ShuffleClient,
  appTag: string,
  revive: boolean,
): Promise<string | undefined> {
  const shuffle = client.shuffle(0, { maps: SHUFFLE.maps, partitions: SHUFFLE.partitions });
  for (let p = 0; p < SHUFFLE.partitions; p += 1) {
    const got = (await shuffle.read(p)).map((r) => decoder.decode(r)).sort();
    const expected = Array.from({ length: SHUFFLE.maps }, (_, m) =>
      Array.from({ length: recordCount(m, p, revive) }, (_, i) => recordText(appTag, m, p, i)),
    )
      .flat()
      .sort();
    if (got.length !== expected.length) {
      return `partition ${p}: ${got.length} records read, ${expected.length} written`;
    }
    const at = got.findIndex((record, i) => record !== expected[i]);
    if (at >= 0)
      return `partition ${p}: record ${JSON.stringify(got[at])} where ${JSON.stringify(expected[at])}`;
  }
  return undefined;
}

function row(target: Target, ruleId: string, title: string, verdict: Verdict, evidence: string): RuleRow {
  return { ruleId, section: '1', release: target.release, title, verdict, evidence };
}

/** The partition listings read while an accepted client's shuffle had revived and not yet ended. */
export interface RevivedListing {
  readonly client: string;
  readonly locations: readonly ListedLocation[];
  /** The listings that answered. */
  readonly read: readonly string[];
}

interface ClientRun {
  readonly admission: RuleRow;
  /** What the accepted client's revive showed, when it ran one. */
  readonly revived?: RevivedListing;
  readonly verified: boolean;
}

/** One client release against the target: admitted or refused as the contract says, with its evidence. */
async function runClient(
  target: Target,
  dataUrl: string,
  client: string,
  options: AdmissionOptions,
): Promise<ClientRun> {
  const expectation = expectedAdmission(target.release, client);
  const ruleId = `1/admission-client-${client}`;
  const title =
    expectation.expect === 'refuse'
      ? `a ${client} client is refused at the handshake by ${target.release} servers, nothing written`
      : expectation.expect === 'accept'
        ? `a ${client} client is accepted by ${target.release} servers and its replicated shuffle verifies`
        : `a ${client} client against ${target.release} servers: a verified shuffle or a clean refusal`;
  const appId = `conformance-${client.replace(/\./g, '_')}-${randomBytes(4).toString('hex')}`;
  const replicate = target.workerUrls.length >= 2;
  const revive = options.revive ?? true;
  const conf: Record<string, string> = {
    'svc.client.push.replicate.enabled': String(replicate),
    ...(revive
      ? {
          'svc.client.shuffle.partitionSplit.threshold': SPLIT_THRESHOLD,
          'svc.client.shuffle.partitionSplit.mode': 'HARD',
        }
      : {}),
  };
  let app: Application | undefined;
  let executor: ShuffleClient | undefined;
  try {
    try {
      app = await withDeadline(
        options.timeoutMs ?? 120_000,
        `startApplication (client ${client})`,
        startApplication({
          master: masterUrlFor(client, dataUrl),
          appId,
          release: client,
          conf,
          logLevel: 'silent',
        }),
      );
    } catch (error) {
      return await refused(target, appId, client, expectation, ruleId, title, error as Error);
    }
    // Accepted at the handshake and registered by the master.
    if (expectation.expect === 'refuse') {
      const trace = await traceOf(target, appId);
      return {
        admission: row(
          target,
          ruleId,
          title,
          'fail',
          `startApplication({ master: ${masterUrlFor(client, dataUrl)}, release: ${client} }) resolved: the master accepted the client ` +
            `and registered application ${appId}` +
            (trace.mentions.length > 0 ? `; ${trace.mentions.join('; ')}` : '') +
            `; expected a refusal (${expectation.because})`,
        ),
        verified: false,
      };
    }
    executor = connectExecutor({
      lifecycleManager: app.lifecycleManager,
      appId,
      release: client,
      conf,
      logLevel: 'silent',
      ...(app.secret === undefined ? {} : { secret: app.secret }),
    });
    const shuffleRun = async (): Promise<ClientRun> => {
      await writeMap(executor!, appId, 0, revive);
      // Map 1 has not ended: every location is still open, so the workers list map 0's revived ones.
      const listed = revive ? await listedLocations(target, appId) : undefined;
      await writeMap(executor!, appId, 1, revive);
      const difference = await verifyAll(executor!, appId, revive);
      const written =
        SHUFFLE.maps * SHUFFLE.partitions * SHUFFLE.recordsPerPartition +
        (revive ? BIG_PARTITION_RECORDS - SHUFFLE.recordsPerPartition : 0);
      return {
        admission: row(
          target,
          ruleId,
          title,
          difference === undefined ? 'pass' : 'fail',
          difference === undefined
            ? `client ${client} at ${masterUrlFor(client, dataUrl)}: application ${appId} registered; ${SHUFFLE.maps} maps wrote ` +
                `${written} records into ${SHUFFLE.partitions} partitions (replication ` +
                `${replicate ? 'on' : `off: ${target.workerUrls.length} worker known`}), every record read back once` +
                ` (${expectation.because})`
            : `client ${client}: the shuffle read back other records than written: ${difference}`,
        ),
        ...(listed === undefined ? {} : { revived: { client, ...listed } }),
        verified: difference === undefined,
      };
    };
    try {
      return await withDeadline(
        options.timeoutMs ?? 120_000,
        `the shuffle of client ${client}`,
        shuffleRun(),
      );
    } catch (error) {
      const refusedNow =
        error instanceof ClientReleaseRefusedError || /CLIENT_RELEASE_REFUSED/.test(String(error));
      return {
        admission: row(
          target,
          ruleId,
          title,
          'fail',
          `client ${client}: the master registered application ${appId}, then its shuffle failed: ` +
            `${(error as Error).name}: ${(error as Error).message}` +
            (refusedNow ? ' (refused after the master had admitted it: not at the handshake)' : ''),
        ),
        verified: false,
      };
    }
  } finally {
    await executor?.close().catch(() => undefined);
    await app?.close().catch(() => undefined);
  }
}

async function refused(
  target: Target,
  appId: string,
  client: string,
  expectation: AdmissionExpectation,
  ruleId: string,
  title: string,
  error: Error,
): Promise<ClientRun> {
  const said = `${error.name}: ${error.message}`;
  if (expectation.expect === 'accept') {
    return {
      admission: row(
        target,
        ruleId,
        title,
        'fail',
        `client ${client} refused: ${said}; expected (${expectation.because})`,
      ),
      verified: false,
    };
  }
  // A clean refusal: the handshake's error class, a message naming both releases, and nothing of the
  // application on any node.
  const problems: string[] = [];
  if (!(error instanceof ClientReleaseRefusedError))
    problems.push(`not a release refusal at the handshake (${error.name})`);
  for (const release of [client, target.release]) {
    if (!error.message.includes(release)) problems.push(`the message does not name release ${release}`);
  }
  const trace = await traceOf(target, appId);
  problems.push(...trace.mentions);
  if (trace.read.length === 0) {
    return {
      admission: row(
        target,
        ruleId,
        title,
        problems.length === 0 ? 'not-applicable' : 'fail',
        `refused: ${said}; no listing of applications or shuffles answered, so "nothing written" cannot be seen` +
          (problems.length === 0 ? '' : `; ${problems.join('; ')}`),
      ),
      verified: false,
    };
  }
  return {
    admission: row(
      target,
      ruleId,
      title,
      problems.length === 0 ? 'pass' : 'fail',
      problems.length === 0
        ? `refused at the handshake: ${said}; application ${appId} absent from ${trace.read.join(', ')} ` +
            `(${expectation.because})`
        : `refused: ${said}; ${problems.join('; ')}`,
    ),
    verified: false,
  };
}

/** Rules 3 and 4 for one client whose shuffle revived partition 0, from the workers' listings. */
export function reviveRow(
  target: Target,
  run: Pick<ClientRun, 'verified'> & { readonly revived?: RevivedListing },
): RuleRow {
  const client = run.revived!.client;
  const { storage, rule } = expectedReviveStorage(client, ['HDD']);
  const ruleId = `1/revive-storage-client-${client}`;
  const title =
    rule === 3
      ? `a ${client} client's revived location honours svc.storage.availableTypes (HDD), not memory`
      : `a ${client} client's revived location defaults to memory storage`;
  const { locations, read } = run.revived!;
  if (read.length === 0) {
    return row(
      target,
      ruleId,
      title,
      'not-applicable',
      `no worker answered its partition listing (${compareReleaseText(target.release, '0.6.0') >= 0 ? '/api/v1/shuffles/partitions' : '/listPartitionLocationInfo'}) on ${target.workerUrls.join(', ') || 'no worker URL given'}`,
    );
  }
  const revived = locations.filter((l) => l.epoch > 0);
  if (revived.length === 0) {
    return row(
      target,
      ruleId,
      title,
      'not-applicable',
      `no revived location (epoch > 0) listed by ${read.join(', ')} after a map wrote past a ${SPLIT_THRESHOLD} ` +
        `split threshold: the deployment did not split (listed: ${locations.map((l) => `${l.partitionId}-${l.epoch} ${l.storage}`).join(', ') || 'none'})`,
    );
  }
  const wrong = revived.filter((l) => l.storage !== storage);
  const shown = (ls: readonly ListedLocation[]): string =>
    ls
      .map((l) => `${l.side} ${l.shuffleKey} ${l.partitionId}-${l.epoch} ${l.storage} on ${l.worker}`)
      .join('; ');
  return row(
    target,
    ruleId,
    title,
    wrong.length === 0 && run.verified ? 'pass' : 'fail',
    wrong.length === 0
      ? `${shown(revived)} (rule ${rule}: storage ${storage})` +
          (run.verified ? '' : '; but the shuffle did not verify')
      : `expected storage ${storage} (rule ${rule}), listed: ${shown(wrong)}`,
  );
}

/** Rule 5 cannot be observed from outside; the row says why, with what was seen. */
function indexZeroRow(target: Target, runs: readonly ClientRun[]): RuleRow {
  const memoryRevives = runs.filter(
    (run) => run.verified && run.revived?.locations.some((l) => l.epoch > 0 && l.storage === 'MEMORY'),
  );
  return row(
    target,
    '1/revive-index-0',
    'a revived location whose storage type has no entry in the create-file order list uses index 0',
    'not-applicable',
    "the create-file order list and the index a file is created at are a worker's internals; the management " +
      "interface lists a location's requested storage, not the index used" +
      (memoryRevives.length > 0
        ? `. Seen: revived MEMORY locations of client ${memoryRevives.map((r) => r.revived!.client).join(', ')} were ` +
          'created and served every record'
        : ''),
  );
}

/** The check: every client release against the target's servers, then the revive rows. */
export function admissionCheck(options: AdmissionOptions = {}): Check {
  return async (target: Target): Promise<readonly RuleRow[]> => {
    const clients = options.clients ?? DEFAULT_CLIENT_RELEASES;
    if (target.dataUrl === undefined) {
      const reason = 'no data endpoint given (--data svc://HOST:PORT): clients cannot be run';
      return [
        ...clients.map((client) =>
          row(
            target,
            `1/admission-client-${client}`,
            `a ${client} client against ${target.release}`,
            'not-applicable',
            reason,
          ),
        ),
        row(
          target,
          '1/revive-storage',
          "revived locations' storage (rules 3 and 4)",
          'not-applicable',
          reason,
        ),
        row(
          target,
          '1/revive-index-0',
          'index 0 for a type not in the order list (rule 5)',
          'not-applicable',
          reason,
        ),
      ];
    }
    const runs: ClientRun[] = [];
    // One client at a time: their rows stay independent, and the deployment sees one application of the suite.
    for (const client of clients) runs.push(await runClient(target, target.dataUrl, client, options));
    const rows = runs.map((run) => run.admission);
    rows.push(...runs.filter((run) => run.revived !== undefined).map((run) => reviveRow(target, run)));
    if (options.revive ?? true) rows.push(indexZeroRow(target, runs));
    return rows;
  };
}

/** The check with its defaults (every client line, a revive in each accepted shuffle). */
export const admission: Check = admissionCheck();
