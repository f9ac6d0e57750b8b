// Keys judged by what they do, not by what /conf shows: a user over quota is refused a new shuffle (the client
// surfaces QUOTA_EXCEEDED), a worker whose host the master denies is refused registration, and past a congestion
// watermark the worker answers pushes congested and the pushing client slows down. Each runs on a master and a
// worker of the suite's own (own-cluster.ts): the suite never sets these keys on the deployment it checks.
import { randomBytes } from 'node:crypto';
import {
  connectExecutor,
  QuotaExceededError,
  startApplication,
  type Application,
  type ClientLogger,
  type ShuffleClient,
} from '../../runtime/client/index.ts';
import { DEFAULT_METRICS_PATH } from '../expectations/metrics.ts';
import { atLeast } from '../expectations/releases.ts';
import { excerpt, request } from '../http.ts';
import { masterDataUrl, startOwnCluster, startOwnMaster, startOwnWorker } from '../own-cluster.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { guarded, notApplicable, verdict, type RuleSpec } from '../rows.ts';
import { scratchDir } from '../servers.ts';
import { withDeadline } from './deadline.ts';

/** The quota keys arrived as `svc.quota.tenant.*` (0.5.0, reference §11.3) and were renamed `user` in 0.6.0 (9.2). */
export const QUOTA_SINCE = '0.5.0';
export function quotaKeyAt(release: string, metric: 'diskBytesWritten' | 'diskFileCount'): string {
  return `svc.quota.${atLeast(release, '0.6.0') ? 'user' : 'tenant'}.${metric}`;
}
/** The host patterns are not in the contract; the reference's documentation dates them to 0.6.0. */
export const HOST_PATTERNS_SINCE = '0.6.0';
/**
 * Congestion control is not dated by the contract (only its 0.6.0 watermark renames); the reference's documentation
 * dates svc.worker.congestionControl.enabled and its sample window to 0.3.0, and its check interval to 0.3.2.
 */
export const CONGESTION_SINCE = '0.3.0';

const SPECS = {
  quota: {
    ruleId: '9.2/behaviour-quota-refusal',
    section: '9.2',
    title:
      'a user over its disk-bytes quota (svc.quota.user.diskBytesWritten; svc.quota.tenant.diskBytesWritten before ' +
      '0.6.0) is refused a new shuffle, and the client surfaces QUOTA_EXCEEDED naming the quota',
  },
  deniedHost: {
    ruleId: '3/denied-worker-host-refused',
    section: '3',
    title:
      'a worker whose host matches svc.master.denyWorkerHostPattern is refused registration: never listed by the ' +
      'master, and its process gives up and exits non-zero',
  },
  congestion: {
    ruleId: '8/congestion-control',
    section: '8',
    title:
      'with svc.worker.congestionControl.enabled, past a high watermark the worker answers pushes congested, the ' +
      'pushing client slows down, and the job still completes with every record',
  },
} satisfies Record<string, RuleSpec>;

interface Client {
  readonly app: Application;
  readonly executor: ShuffleClient;
  close(): Promise<void>;
}

async function startClient(
  release: string,
  master: string,
  conf: Record<string, string>,
  logger?: ClientLogger,
): Promise<Client> {
  const options = {
    release,
    // One worker: replication (on by default before 0.3.0, contract 9.2) would find no second one.
    conf: { 'svc.client.push.replicate.enabled': 'false', ...conf },
    ...(logger === undefined ? { logLevel: 'silent' as const } : { logger, logLevel: 'info' as const }),
  };
  const appId = `conformance-effects-${randomBytes(4).toString('hex')}`;
  const app = await startApplication({ master, appId, ...options });
  const executor = connectExecutor({
    lifecycleManager: app.lifecycleManager,
    appId,
    ...options,
    ...(app.secret === undefined ? {} : { secret: app.secret }),
  });
  return {
    app,
    executor,
    close: async () => {
      await executor.close().catch(() => undefined);
      await app.close().catch(() => undefined);
    },
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const record = (shuffle: number, map: number, partition: number, index: number, bytes: number) =>
  encoder.encode(`s${shuffle}m${map}p${partition}r${index}`.padEnd(bytes, '.'));

interface Job {
  readonly maps: number;
  readonly partitions: number;
  readonly records: number;
  readonly recordBytes: number;
}

/** Writes every map of shuffle `id`; rejects with the client's error (a refusal among them). */
async function writeJob(client: ShuffleClient, id: number, job: Job): Promise<void> {
  const shuffle = client.shuffle(id, { maps: job.maps, partitions: job.partitions });
  await Promise.all(
    Array.from({ length: job.maps }, async (_, map) => {
      const writer = shuffle.writer(map, 0);
      for (let p = 0; p < job.partitions; p += 1)
        for (let i = 0; i < job.records; i += 1)
          if (!writer.write(p, record(id, map, p, i, job.recordBytes)))
            await new Promise<void>((resolve) => writer.once('drain', () => resolve()));
      const result = await writer.close();
      if (result.outcome !== 'won') throw new Error(`map ${map} ended ${result.outcome}, not won`);
    }),
  );
}

/** The first difference between what shuffle `id` reads and what writeJob wrote, or undefined. */
async function verifyJob(client: ShuffleClient, id: number, job: Job): Promise<string | undefined> {
  const shuffle = client.shuffle(id, { maps: job.maps, partitions: job.partitions });
  for (let p = 0; p < job.partitions; p += 1) {
    const got = (await shuffle.read(p)).map((r) => decoder.decode(r)).sort();
    const expected = Array.from({ length: job.maps }, (_, m) =>
      Array.from({ length: job.records }, (_, i) => decoder.decode(record(id, m, p, i, job.recordBytes))),
    )
      .flat()
      .sort();
    if (got.length !== expected.length)
      return `partition ${p}: ${got.length} records read, ${expected.length} written`;
    if (got.some((text, i) => text !== expected[i])) return `partition ${p}: other records than written`;
  }
  return undefined;
}

/** What a quota probe saw: the refusal (when there was one) and the line of evidence. */
export interface QuotaProbe {
  readonly refusal?: QuotaExceededError;
  readonly evidence: string;
}

const QUOTA_JOB: Job = { maps: 1, partitions: 2, records: 20, recordBytes: 64 };
const QUOTA_WAIT_MS = 30_000;

/**
 * A master of `release` with `masterSettings` (a quota of 1 set among them) and a worker of its own; one application
 * runs as user conformance/quota and writes shuffles until one is refused or QUOTA_WAIT_MS pass. The first shuffle
 * puts the user over any quota of one byte or one file; the master learns it from the worker's next heartbeat.
 */
export async function quotaProbe(
  command: readonly string[],
  release: string,
  dir: string,
  masterSettings: readonly string[],
): Promise<QuotaProbe> {
  const cluster = await startOwnCluster(command, release, dir, {
    master: ['svc.master.userResourceConsumption.update.interval=200ms', ...masterSettings],
  });
  let client: Client | undefined;
  try {
    client = await startClient(release, cluster.dataUrl, {
      'svc.identity.user-specific.tenant': 'conformance',
      'svc.identity.user-specific.userName': 'quota',
      'svc.client.application.heartbeatInterval': '200ms',
    });
    const started = Date.now();
    const written: number[] = [];
    for (let id = 0; ; id += 1) {
      try {
        await withDeadline(QUOTA_WAIT_MS, `shuffle ${id}`, writeJob(client.executor, id, QUOTA_JOB));
        written.push(id);
      } catch (error) {
        const took = Date.now() - started;
        return error instanceof QuotaExceededError
          ? {
              refusal: error,
              evidence: `master ${cluster.dataUrl} (${masterSettings.join(', ')}): user conformance/quota wrote ${written.length} shuffle(s); shuffle ${id} refused after ${took} ms: ${error.name} ${error.status}: "${excerpt(error.message, 240)}"`,
            }
          : {
              evidence: `master ${cluster.dataUrl} (${masterSettings.join(', ')}): shuffle ${id} failed otherwise: ${(error as Error).name}: ${excerpt((error as Error).message, 240)}`,
            };
      }
      if (Date.now() - started > QUOTA_WAIT_MS)
        return {
          evidence: `master ${cluster.dataUrl} (${masterSettings.join(', ')}): user conformance/quota wrote ${written.length} shuffles in ${QUOTA_WAIT_MS} ms, none refused: the quota changed nothing`,
        };
    }
  } finally {
    await client?.close();
    await cluster.stop();
  }
}

/** Whether a refusal is the one the quota key asks for: QUOTA_EXCEEDED, naming the key in effect. */
export function refusalNames(probe: QuotaProbe, key: string): boolean {
  return probe.refusal?.status === 'QUOTA_EXCEEDED' && probe.refusal.message.includes(key);
}

async function quotaRow(target: Target, command: readonly string[], dir: string): Promise<RuleRow[]> {
  const release = target.release;
  if (!atLeast(release, QUOTA_SINCE))
    return [
      notApplicable(
        release,
        SPECS.quota,
        `the per-user quota keys arrived in ${QUOTA_SINCE} (as svc.quota.tenant.*); ${release} is older`,
      ),
    ];
  const key = quotaKeyAt(release, 'diskBytesWritten');
  return guarded(release, SPECS.quota, async () => {
    const probe = await quotaProbe(command, release, `${dir}/quota`, [`${key}=1`]);
    return verdict(release, SPECS.quota, refusalNames(probe, key), probe.evidence);
  });
}

const DENY_REGISTER_TIMEOUT = '2s';
const DENIED_EXIT_WAIT_MS = 60_000;

async function deniedHostRow(target: Target, command: readonly string[], dir: string): Promise<RuleRow[]> {
  const release = target.release;
  if (!atLeast(release, HOST_PATTERNS_SINCE))
    return [
      notApplicable(
        release,
        SPECS.deniedHost,
        `the worker host patterns arrived in ${HOST_PATTERNS_SINCE}; ${release} is older`,
      ),
    ];
  return guarded(release, SPECS.deniedHost, async () => {
    const pattern = '127\\.0\\.0\\.1';
    const master = await startOwnMaster(command, release, `${dir}/deny-master`, [
      `svc.master.denyWorkerHostPattern=${pattern}`,
    ]);
    try {
      const worker = await startOwnWorker(
        command,
        release,
        `${dir}/deny-worker`,
        masterDataUrl(master, release),
        [`svc.worker.register.timeout=${DENY_REGISTER_TIMEOUT}`],
      );
      let code: number | null | string;
      let output: string;
      if (worker.kind === 'exited') {
        code = worker.code;
        output = worker.output;
      } else {
        // Either it gives up and exits, or it registers (then there is nothing more to wait for).
        code = await Promise.race([
          worker.server.exited(),
          worker.server
            .waitForLine((line) => line.includes('"worker.registered"'), DENIED_EXIT_WAIT_MS)
            .then(
              (line) => (line === undefined ? 'exited' : 'still running, registered'),
              () => `still running after ${DENIED_EXIT_WAIT_MS} ms`,
            ),
        ]);
        await worker.server.stop();
        output = worker.server.output.join('\n');
      }
      const listing = await request(target, master.httpUrl, '/api/v1/workers', { credentials: false });
      const workers = ((listing.json as { workers?: unknown[] } | undefined)?.workers ?? []).length;
      const registered = output.split('\n').some((line) => line.includes('"worker.registered"'));
      const named = output.split('\n').find((line) => line.includes('denyWorkerHostPattern'));
      const evidence =
        `master with svc.master.denyWorkerHostPattern=${pattern}; a worker on 127.0.0.1 with ` +
        `svc.worker.register.timeout=${DENY_REGISTER_TIMEOUT}: exited ${code}` +
        `${registered ? ', after saying it registered' : ''}; ${listing.evidence}: ${workers} worker(s) listed` +
        (named === undefined ? '; no output line names the pattern' : `; "${excerpt(named, 200)}"`);
      return verdict(
        release,
        SPECS.deniedHost,
        typeof code === 'number' && code !== 0 && !registered && listing.status === 200 && workers === 0,
        evidence,
      );
    } finally {
      await master.server.stop();
    }
  });
}

/** The worker counts pushes it answered congested (svc's PushDataCongestedCount; the contract names no metric). */
const CONGESTED_COUNTER = 'metrics_PushDataCongestedCount_Count';
/** The client library's line when a map task shrinks its push window after a congested answer. */
const SLOWED_DOWN = 'push slowed down: the worker answered CONGESTED';
// 2 maps × 2 partitions × 40 KB in 1 KB batches (one record each): far above the user high watermark at the first
// check, and 160 batches, ten times what the map tasks keep in flight (4 per partition), so that pushes still arrive
// after the worker's check saw the watermark passed (in 8 KB batches a fast server took the whole job before any
// check; in 2 KB batches, five rounds, a 2-core Intel Xeon sometimes did too).
const CONGESTION_JOB: Job = { maps: 2, partitions: 2, records: 40, recordBytes: 1000 };
const CONGESTION_BATCH = '1k';
/**
 * For a worker-wide disk-buffer watermark of one byte (no low watermark: an episode lasts while anything is
 * buffered): 4 KB batches, so that a job slowed to one batch in flight and a pause of up to 2 s per push still ends
 * within the probe's deadline, and still three rounds of the in-flight windows.
 */
export const DISK_BUFFER_CONGESTION_BATCH = '4k';
/**
 * And checks every millisecond: bytes wait for a disk only while a write is under way, and on a fast machine the
 * whole job wrote within the default 10 ms between two checks (none saw a byte buffered: 30 November, a 2-core Intel
 * Xeon, in four runs of four; with 1 ms, congested in every run).
 */
export const DISK_BUFFER_CHECK_INTERVAL = 'svc.worker.congestionControl.check.interval=1ms';

/** Speeds measured over 1 s and compared every 10 ms, so that the job passes the user watermark at once. */
function congestionSettings(release: string): string[] {
  return [
    'svc.worker.congestionControl.enabled=true',
    'svc.worker.congestionControl.userProduceSpeed.high.watermark=32k',
    'svc.worker.congestionControl.userProduceSpeed.low.watermark=16k',
    'svc.worker.congestionControl.sample.time.window=1s',
    // The key of 0.3.2; before, a worker checks as often by default.
    ...(atLeast(release, '0.3.2') ? ['svc.worker.congestionControl.check.interval=10ms'] : []),
  ];
}

function counterValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  const value = line === undefined ? undefined : Number(line.trim().split(/\s+/).at(-1));
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/** What a congestion probe saw: whether the worker answered congested and the client slowed, and the evidence. */
export interface CongestionProbe {
  readonly congested: boolean;
  readonly evidence: string;
}

/**
 * A worker of `release` with `settings` and a master of its own; one application pushes CONGESTION_JOB in `batch`
 * batches (2 KB unless told) and reads it back. Congested: the client slowed down (its push window shrank below the maximum), the
 * worker counted congested answers where it exports the counter, and every record came back.
 */
export async function congestionProbe(
  command: readonly string[],
  release: string,
  dir: string,
  settings: readonly string[],
  options: { readonly metricsPath?: string; readonly batch?: string } = {},
): Promise<CongestionProbe> {
  const batch = options.batch ?? CONGESTION_BATCH;
  const cluster = await startOwnCluster(command, release, dir, { worker: settings });
  const slowed: Record<string, unknown>[] = [];
  const keep = (fields: Record<string, unknown>) => {
    if (fields.event === SLOWED_DOWN) slowed.push(fields);
  };
  let client: Client | undefined;
  try {
    client = await startClient(
      release,
      cluster.dataUrl,
      { 'svc.client.push.buffer.max.size': batch },
      { error: keep, warn: keep, info: keep },
    );
    await withDeadline(120_000, 'the job', writeJob(client.executor, 0, CONGESTION_JOB));
    const difference = await withDeadline(
      60_000,
      'reading the job',
      verifyJob(client.executor, 0, CONGESTION_JOB),
    );
    const metrics = await request(
      { release, masterUrl: '', workerUrls: [] },
      cluster.worker.httpUrl,
      options.metricsPath ?? DEFAULT_METRICS_PATH,
    );
    const counted = counterValue(metrics.text, CONGESTED_COUNTER);
    const shrank = slowed.filter((line) => Number(line.window) < Number(line.maxInFlightPerPartition));
    const evidence =
      `worker with ${settings.join(', ')}; ${CONGESTION_JOB.maps} maps pushed ` +
      `${CONGESTION_JOB.maps * CONGESTION_JOB.partitions * CONGESTION_JOB.records * CONGESTION_JOB.recordBytes} B in ${batch} batches; ` +
      `${metrics.evidence}: ${CONGESTED_COUNTER} ${counted ?? 'not exported'}; the client slowed down ${slowed.length} time(s)` +
      (shrank[0] === undefined
        ? ''
        : ` (window ${String(shrank[0].window)} of ${String(shrank[0].maxInFlightPerPartition)})`) +
      `; ${difference === undefined ? 'every record read back' : `read back wrong: ${difference}`}`;
    return {
      congested: difference === undefined && shrank.length > 0 && (counted === undefined || counted > 0),
      evidence,
    };
  } finally {
    await client?.close();
    await cluster.stop();
  }
}

async function congestionRow(target: Target, command: readonly string[], dir: string): Promise<RuleRow[]> {
  const release = target.release;
  if (!atLeast(release, CONGESTION_SINCE))
    return [
      notApplicable(
        release,
        SPECS.congestion,
        `congestion control arrived in ${CONGESTION_SINCE} (with its sample window); ${release} is older`,
      ),
    ];
  return guarded(release, SPECS.congestion, async () => {
    const probe = await congestionProbe(command, release, `${dir}/congestion`, congestionSettings(release), {
      metricsPath: target.metricsPath,
    });
    return verdict(release, SPECS.congestion, probe.congested, probe.evidence);
  });
}

export const keyEffectsCheck = async (target: Target): Promise<RuleRow[]> => {
  const command = target.serverCommand;
  if (command === undefined) {
    const why = 'the suite was given no server command (--server-command) to start servers of its own';
    return Object.values(SPECS).map((spec) => notApplicable(target.release, spec, why));
  }
  const scratch = scratchDir();
  try {
    return [
      ...(await quotaRow(target, command, scratch.dir)),
      ...(await deniedHostRow(target, command, scratch.dir)),
      ...(await congestionRow(target, command, scratch.dir)),
    ];
  } finally {
    scratch.dispose();
  }
};
