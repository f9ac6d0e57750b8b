/**
 * The top-50 query of contract section 4.3 (the replacement of the removed `/listTopDiskUsedApps`), run through a
 * real Prometheus: applications write known amounts, Prometheus scrapes the workers, and the contract's query,
 * written here from the contract's words in both spellings of the role label, must answer the truth. The query is
 * not imported from core/release: the suite is an independent oracle.
 */
import { randomBytes } from 'node:crypto';
import {
  connectExecutor,
  startApplication,
  type Application,
  type ShuffleClient,
} from '../../runtime/client/index.ts';
import { findPrometheus, PrometheusRun, type ScrapeTarget } from '../prometheus/server.ts';
import type { Check, RuleRow, Target, Verdict } from '../report/row.ts';
import { withDeadline } from './deadline.ts';

/** Contract 4.3, as written. */
export const SECTION_4_3 =
  '/listTopDiskUsedApps on master and worker is removed since 0.6.0. The replacement is a metrics query. In a ' +
  'PromQL-compatible system, take the top 50 applications by the sum, grouped by applicationId, of metric ' +
  'metrics_diskBytesWritten_Value, filtered to the worker role and to a non-empty applicationId. The role label ' +
  'value is written Worker in one statement of the guide and worker in another.';

/** Contract section 8: "Top applications query: 50". */
export const TOP_APPLICATIONS = 50;

/** The two spellings of the role label the contract quotes. */
export const ROLE_SPELLINGS = ['Worker', 'worker'] as const;
export type RoleSpelling = (typeof ROLE_SPELLINGS)[number];

export const DISK_BYTES_METRIC = 'metrics_diskBytesWritten_Value';

/** The contract's query: top 50 by the sum, grouped by applicationId, of the metric, worker role, non-empty id. */
export function contractQuery(role: RoleSpelling): string {
  return `topk(${TOP_APPLICATIONS}, sum by (applicationId) (${DISK_BYTES_METRIC}{role="${role}", applicationId!=""}))`;
}

export interface Top50Options {
  /** Applications the check runs, each writing a different amount; default 52 (more than 50, so the limit binds). */
  readonly applications?: number;
  /** Application k (1-based) writes k × unitBytes of records; default 2 KiB. */
  readonly unitBytes?: number;
  /** The prometheus binary; default SVC_PROMETHEUS, else `prometheus` on the PATH. */
  readonly prometheusBinary?: string;
  /** Paths tried for each worker's Prometheus text; default `/metrics/prometheus`, then `/metrics`. */
  readonly metricsPaths?: readonly string[];
  /** Deadline of the whole check, ms; default 180 s. */
  readonly timeoutMs?: number;
}

const RECORD_BYTES = 256;
const encoder = new TextEncoder();

function row(
  target: Target,
  ruleId: string,
  section: string,
  title: string,
  verdict: Verdict,
  evidence: string,
): RuleRow {
  return { ruleId, section, release: target.release, title, verdict, evidence };
}

const TITLES = {
  Worker: 'the section 4.3 query with role="Worker" answers the top applications by disk bytes written',
  worker: 'the section 4.3 query with role="worker" answers the top applications by disk bytes written',
  truth: 'metrics_diskBytesWritten_Value counts the bytes each application wrote to the workers’ disks',
  limit: 'the top applications query lists 50 applications',
} as const;

function allRows(target: Target, verdict: Verdict, evidence: string): RuleRow[] {
  return [
    row(target, '4.3/top50-query-role-Worker', '4.3', TITLES.Worker, verdict, evidence),
    row(target, '4.3/top50-query-role-worker', '4.3', TITLES.worker, verdict, evidence),
    row(target, '4.3/disk-bytes-written-truth', '4.3', TITLES.truth, verdict, evidence),
    row(target, '8/top-applications-limit', '8', TITLES.limit, verdict, evidence),
  ];
}

function compareRelease(a: string, b: string): number {
  const parts = (text: string): number[] =>
    (/^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text.trim()) ?? ['', '0', '0', '0'])
      .slice(1)
      .map((p) => Number(p ?? 0));
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < 3; i += 1) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

/** One series of a Prometheus text exposition (enough of the format for gauges). */
export interface ExposedSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export function parseSamples(text: string): ExposedSample[] {
  const samples: ExposedSample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export interface Exported {
  /** Sum of metrics_diskBytesWritten_Value over the workers, by applicationId (non-empty ids only). */
  readonly byApp: Map<string, number>;
  /** Role label values seen on those series. */
  readonly roles: Set<string>;
}

async function getText(target: Target, url: string): Promise<{ status: number; body: string } | undefined> {
  const headers: Record<string, string> =
    target.auth === undefined
      ? {}
      : {
          authorization: `Basic ${Buffer.from(`${target.auth.user}:${target.auth.password}`).toString('base64')}`,
        };
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

async function exportedBytes(target: Target, endpoints: readonly string[]): Promise<Exported> {
  const byApp = new Map<string, number>();
  const roles = new Set<string>();
  for (const url of endpoints) {
    const answer = await getText(target, url);
    if (answer === undefined || answer.status !== 200)
      throw new Error(`GET ${url}: ${answer?.status ?? 'no answer'}`);
    for (const sample of parseSamples(answer.body)) {
      const app = sample.labels.applicationId ?? '';
      if (sample.name !== DISK_BYTES_METRIC || app === '') continue;
      byApp.set(app, (byApp.get(app) ?? 0) + sample.value);
      if (sample.labels.role !== undefined) roles.add(sample.labels.role);
    }
  }
  return { byApp, roles };
}

/** Each worker's metrics endpoint: the first candidate path that serves Prometheus text. */
async function metricsEndpoints(
  target: Target,
  paths: readonly string[],
): Promise<{ readonly urls: string[]; readonly scrape: ScrapeTarget[]; readonly missing: string[] }> {
  const urls: string[] = [];
  const scrape: ScrapeTarget[] = [];
  const missing: string[] = [];
  for (const base of target.workerUrls) {
    let found = false;
    for (const metricsPath of paths) {
      const answer = await getText(target, `${base}${metricsPath}`);
      if (answer?.status === 200 && /^metrics_/m.test(answer.body)) {
        urls.push(`${base}${metricsPath}`);
        scrape.push({ hostPort: new URL(base).host, metricsPath });
        found = true;
        break;
      }
    }
    if (!found) missing.push(base);
  }
  return { urls, scrape, missing };
}

interface RunningApp {
  readonly app: Application;
  readonly executor: ShuffleClient;
  readonly payload: number;
}

async function writeKnownAmount(
  target: Target,
  dataUrl: string,
  appId: string,
  payload: number,
): Promise<RunningApp> {
  const conf = { 'svc.client.push.replicate.enabled': 'false' };
  const app = await startApplication({
    master: dataUrl,
    appId,
    release: target.release,
    conf,
    logLevel: 'silent',
  });
  const executor = connectExecutor({
    lifecycleManager: app.lifecycleManager,
    appId,
    release: target.release,
    conf,
    logLevel: 'silent',
    ...(app.secret === undefined ? {} : { secret: app.secret }),
  });
  try {
    const writer = executor.shuffle(0, { maps: 1, partitions: 1 }).writer(0, 0);
    for (let written = 0; written < payload; written += RECORD_BYTES) {
      const record = encoder.encode(`${appId}/${written}`.padEnd(RECORD_BYTES, '.'));
      if (!writer.write(0, record))
        await new Promise<void>((resolve) => writer.once('drain', () => resolve()));
    }
    const result = await writer.close();
    if (result.outcome !== 'won') throw new Error(`application ${appId}: its map ended ${result.outcome}`);
  } catch (error) {
    await executor.close().catch(() => undefined);
    await app.close().catch(() => undefined);
    throw error;
  }
  return { app, executor, payload };
}

export interface Answer {
  readonly request: string;
  readonly byApp: Map<string, number>;
}

/** The top entries the truth (the workers' own sums) gives, ties at the boundary included. */
function expectedTop(exported: ReadonlyMap<string, number>): {
  readonly must: Set<string>;
  readonly may: Set<string>;
} {
  const sorted = [...exported].sort((a, b) => b[1] - a[1]);
  if (sorted.length <= TOP_APPLICATIONS) return { must: new Set(sorted.map(([app]) => app)), may: new Set() };
  const boundary = sorted[TOP_APPLICATIONS - 1]![1];
  return {
    must: new Set(sorted.filter(([, v]) => v > boundary).map(([app]) => app)),
    may: new Set(sorted.filter(([, v]) => v === boundary).map(([app]) => app)),
  };
}

/** Why `answer` differs from the truth, or undefined when it equals it. */
function difference(answer: Answer, exported: ReadonlyMap<string, number>): string | undefined {
  const { must, may } = expectedTop(exported);
  const expectedCount = Math.min(TOP_APPLICATIONS, exported.size);
  if (answer.byApp.size !== expectedCount) {
    const missing = [...must].filter((app) => !answer.byApp.has(app)).slice(0, 3);
    return (
      `${answer.byApp.size} applications answered, ${expectedCount} expected` +
      (missing.length > 0 ? ` (missing: ${missing.join(', ')})` : '')
    );
  }
  for (const [app, value] of answer.byApp) {
    if (!must.has(app) && !may.has(app))
      return `application ${app} answered but is not among the top ${TOP_APPLICATIONS}`;
    if (value !== exported.get(app)) {
      return `application ${app}: ${value} bytes answered, the workers export ${String(exported.get(app))}`;
    }
  }
  return undefined;
}

export function queryRow(
  target: Target,
  spelling: RoleSpelling,
  answers: ReadonlyMap<RoleSpelling, Answer>,
  exported: Exported,
): RuleRow {
  const ruleId = `4.3/top50-query-role-${spelling}`;
  const answer = answers.get(spelling)!;
  const other = ROLE_SPELLINGS.find((s) => s !== spelling)!;
  const otherAnswer = answers.get(other)!;
  const diff = difference(answer, exported.byApp);
  const rendered = [...exported.roles].map((r) => `role="${r}"`).join(', ') || 'no role label';
  if (diff === undefined) {
    const top = [...answer.byApp].sort((a, b) => b[1] - a[1]);
    return row(
      target,
      ruleId,
      '4.3',
      TITLES[spelling],
      'pass',
      `${answer.request} → ${answer.byApp.size} applications, each with the sum the workers export ` +
        `(largest ${top[0]?.[0] ?? '-'} ${top[0]?.[1] ?? 0} B, smallest ${top.at(-1)?.[0] ?? '-'} ${top.at(-1)?.[1] ?? 0} B)`,
    );
  }
  if (answer.byApp.size === 0 && difference(otherAnswer, exported.byApp) === undefined) {
    return row(
      target,
      ruleId,
      '4.3',
      TITLES[spelling],
      'not-applicable',
      `${answer.request} matches no series: the workers render ${rendered}, and PromQL label matching is ` +
        `case-sensitive; the contract quotes the guide writing both spellings, and role="${other}" answers the truth`,
    );
  }
  return row(
    target,
    ruleId,
    '4.3',
    TITLES[spelling],
    'fail',
    `${answer.request}: ${diff} (workers render ${rendered})`,
  );
}

/** Our applications' exported bytes against what they wrote: at least the payload, at most a framing margin over it. */
export function truthRow(
  target: Target,
  apps: readonly { appId: string; payload: number }[],
  exported: Exported,
): RuleRow {
  const problems: string[] = [];
  for (const { appId, payload } of apps) {
    const bytes = exported.byApp.get(appId);
    // Framing (headers, checksums) adds a little per pushed batch; nothing may be missing.
    const most = payload + 4_096 + Math.ceil(payload / 16);
    if (bytes === undefined) problems.push(`${appId} wrote ${payload} B, exported nothing`);
    else if (bytes < payload || bytes > most)
      problems.push(`${appId} wrote ${payload} B, exported ${bytes} B`);
  }
  const ordered = [...apps].sort((a, b) => a.payload - b.payload);
  const overhead = Math.max(
    0,
    ...apps.map(({ appId, payload }) => (exported.byApp.get(appId) ?? payload) - payload),
  );
  for (let i = 1; i < ordered.length && problems.length === 0; i += 1) {
    const before = exported.byApp.get(ordered[i - 1]!.appId) ?? 0;
    const now = exported.byApp.get(ordered[i]!.appId) ?? 0;
    if (now <= before)
      problems.push(
        `${ordered[i]!.appId} wrote more than ${ordered[i - 1]!.appId} but exports ${now} ≤ ${before} B`,
      );
  }
  return row(
    target,
    '4.3/disk-bytes-written-truth',
    '4.3',
    TITLES.truth,
    problems.length === 0 ? 'pass' : 'fail',
    problems.length === 0
      ? `${apps.length} applications wrote ${ordered[0]?.payload ?? 0} to ${ordered.at(-1)?.payload ?? 0} B each; ` +
          `${DISK_BYTES_METRIC} summed over the workers holds each amount, in the same order (framing adds at ` +
          `most ${overhead} B)`
      : problems.slice(0, 3).join('; '),
  );
}

export function limitRow(
  target: Target,
  answers: ReadonlyMap<RoleSpelling, Answer>,
  exported: Exported,
): RuleRow {
  const holding = exported.byApp.size;
  const best = ROLE_SPELLINGS.map((s) => answers.get(s)!).find((a) => a.byApp.size > 0);
  if (holding <= TOP_APPLICATIONS) {
    return row(
      target,
      '8/top-applications-limit',
      '8',
      TITLES.limit,
      'not-applicable',
      `only ${holding} applications hold disk bytes: the limit of ${TOP_APPLICATIONS} does not bind`,
    );
  }
  const count = best?.byApp.size ?? 0;
  return row(
    target,
    '8/top-applications-limit',
    '8',
    TITLES.limit,
    count === TOP_APPLICATIONS ? 'pass' : 'fail',
    `${holding} applications hold disk bytes; ${best?.request ?? 'neither spelling'} answered ${count}`,
  );
}

/** How many times the check reads the truth around a scrape before it gives up on a deployment that keeps moving. */
const TRUTH_READINGS = 3;

/** Applications whose exported bytes differ between two readings, including those that came or went. */
function changedApplications(before: Exported, after: Exported): string[] {
  const apps = new Set([...before.byApp.keys(), ...after.byApp.keys()]);
  return [...apps].filter((app) => before.byApp.get(app) !== after.byApp.get(app));
}

/**
 * The contract's query in both spellings, asked after a scrape that lies between two equal readings of the workers'
 * truth. Without the readings on both sides, an application of an earlier check whose series the workers drop (its
 * application ended) between a scrape and a reading would stand in the answer and not in the truth. A truth that
 * moves is read again, `readings` times at most; then the applications that kept moving are returned.
 */
export async function agreedReading(
  prometheus: PrometheusRun,
  target: Target,
  metricsUrls: readonly string[],
  readings = TRUTH_READINGS,
): Promise<
  { readonly answers: Map<RoleSpelling, Answer>; readonly truth: Exported } | { readonly moved: string[] }
> {
  let moved: string[] = [];
  for (let attempt = 0; attempt < readings; attempt += 1) {
    const before = await exportedBytes(target, metricsUrls);
    await prometheus.scrapedAfter(Date.now());
    const answers = new Map<RoleSpelling, Answer>();
    for (const spelling of ROLE_SPELLINGS) {
      const { request, samples } = await prometheus.query(contractQuery(spelling));
      answers.set(spelling, {
        request,
        byApp: new Map(samples.map((s) => [s.metric.applicationId ?? '', s.value])),
      });
    }
    const after = await exportedBytes(target, metricsUrls);
    moved = changedApplications(before, after);
    if (moved.length === 0) return { answers, truth: after };
  }
  return { moved };
}

export function top50Check(options: Top50Options = {}): Check {
  return async (target: Target): Promise<readonly RuleRow[]> => {
    if (compareRelease(target.release, '0.6.0') < 0) {
      return allRows(
        target,
        'not-applicable',
        `release ${target.release} serves /listTopDiskUsedApps; the metrics query replaces it from 0.6.0 (4.3)`,
      );
    }
    if (target.dataUrl === undefined) {
      return allRows(
        target,
        'not-applicable',
        'no data endpoint given (--data svc://HOST:PORT): no application can write',
      );
    }
    if (target.workerUrls.length === 0) {
      return allRows(
        target,
        'not-applicable',
        'no worker URL given (--worker http://HOST:PORT): nothing to scrape',
      );
    }
    const binary = findPrometheus(options.prometheusBinary);
    if (binary === undefined) {
      return allRows(
        target,
        'not-applicable',
        `no prometheus binary (${options.prometheusBinary ?? 'SVC_PROMETHEUS or prometheus on the PATH'}); ` +
          'install Debian’s package with conformance/prometheus/install.sh',
      );
    }
    const endpoints = await metricsEndpoints(
      target,
      options.metricsPaths ?? ['/metrics/prometheus', '/metrics'],
    );
    if (endpoints.missing.length > 0) {
      return allRows(
        target,
        'not-applicable',
        `no Prometheus text at ${(options.metricsPaths ?? ['/metrics/prometheus', '/metrics']).join(' or ')} on ` +
          `${endpoints.missing.join(', ')} (the contract does not name the metrics path)`,
      );
    }
    const dataUrl = target.dataUrl;
    let prometheus: PrometheusRun;
    try {
      prometheus = await PrometheusRun.start({
        binary,
        targets: endpoints.scrape,
        ...(target.auth === undefined ? {} : { basicAuth: target.auth }),
      });
    } catch (error) {
      // The suite's own tool did not start: nothing is known of the deployment.
      return allRows(
        target,
        'not-applicable',
        `prometheus (${binary}) did not start: ${(error as Error).message}`,
      );
    }
    const apps: RunningApp[] = [];
    try {
      return await withDeadline(
        options.timeoutMs ?? 180_000,
        'the top-50 check',
        (async () => {
          const run = randomBytes(3).toString('hex');
          const count = options.applications ?? TOP_APPLICATIONS + 2;
          const unit = options.unitBytes ?? 2_048;
          const wanted = Array.from({ length: count }, (_, i) => ({
            appId: `conformance-top50-${run}-${String(i + 1).padStart(3, '0')}`,
            payload: (i + 1) * unit,
          }));
          // A few at a time: quicker than one by one, gentle on a small deployment.
          for (let i = 0; i < wanted.length; i += 4) {
            apps.push(
              ...(await Promise.all(
                wanted.slice(i, i + 4).map((w) => writeKnownAmount(target, dataUrl, w.appId, w.payload)),
              )),
            );
          }
          const reading = await agreedReading(prometheus, target, endpoints.urls);
          if ('moved' in reading) {
            return allRows(
              target,
              'not-applicable',
              `the deployment's disk bytes changed while the check ran, ${TRUTH_READINGS} times ` +
                `(${reading.moved.slice(0, 3).join(', ')}): other applications are writing, so no answer can ` +
                'be compared with a fixed truth',
            );
          }
          const { answers, truth: after } = reading;
          return [
            queryRow(target, 'Worker', answers, after),
            queryRow(target, 'worker', answers, after),
            truthRow(target, wanted, after),
            limitRow(target, answers, after),
          ];
        })(),
      );
    } catch (error) {
      return allRows(target, 'fail', `the check could not finish: ${(error as Error).message}`);
    } finally {
      await prometheus.stop();
      await Promise.all(
        apps.map(async ({ app, executor }) => {
          await executor.close().catch(() => undefined);
          await app.close().catch(() => undefined);
        }),
      );
    }
  };
}

/** The check with its defaults (52 applications, Prometheus from the PATH). */
export const top50: Check = top50Check();
