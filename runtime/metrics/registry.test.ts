import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { initialMasterState } from '../../core/machines/master/index.ts';
import { testMasterConfig } from '../../core/machines/master/testing.ts';
import { initialWorkerState } from '../../core/machines/worker/index.ts';
import { workerId } from '../../core/machines/worker/test-kit.ts';
import { testWorkerConfig } from '../../core/machines/worker/testing.ts';
import { topDiskUsedAppsQuery } from '../../core/release/prometheus.ts';
import { KNOWN_RELEASES, type Release } from '../../core/release/version.ts';
import { METRIC_CATALOGUE, seriesFamilies } from './catalogue.ts';
import {
  createMetrics,
  parseExtraLabels,
  type MasterMetricsOptions,
  type WorkerMetrics,
  type WorkerMetricsOptions,
} from './registry.ts';
import { parseExposition, runShuffle, samplesOf, type ExpositionSample } from './testing.ts';

const MASTER_STATE = initialMasterState(testMasterConfig());
const WORKER_STATE = initialWorkerState(testWorkerConfig(workerId('w1')));

function master(overrides: Partial<MasterMetricsOptions> = {}) {
  return createMetrics({
    role: 'master',
    release: '0.6.0',
    instance: 'm1:9098',
    state: () => MASTER_STATE,
    processGauges: false,
    ...overrides,
  });
}

function worker(overrides: Partial<WorkerMetricsOptions> = {}): WorkerMetrics {
  return createMetrics({
    role: 'worker',
    release: '0.6.0',
    instance: 'w1:9096',
    state: () => WORKER_STATE,
    processGauges: false,
    ...overrides,
  });
}

async function scrape(metrics: { render(): Promise<string> }): Promise<ExpositionSample[]> {
  return samplesOf(parseExposition(await metrics.render()));
}

function valueOf(samples: readonly ExpositionSample[], name: string, labels: Record<string, string> = {}) {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.equal(found.length, 1, `one ${name} ${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]!.value;
}

/** Contract section 9.4 as it concerns what svc renders: [role, name before, name after, release of the rename]. */
const RENAMED: readonly (readonly ['master' | 'worker', string, string, Release, string])[] = [
  ['master', 'BlacklistedWorkerCount', 'ExcludedWorkerCount', '0.3.0', 'Value'],
  ['master', 'LostWorkers', 'LostWorkerCount', '0.5.0', 'Value'],
  ['worker', 'ChunkStreamCount', 'ActiveChunkStreamCount', '0.5.0', 'Value'],
  ['worker', 'MasterPushDataTime', 'PrimaryPushDataTime', '0.3.0', 'Count'],
  ['worker', 'MasterPushDataTime', 'PrimaryPushDataTime', '0.3.0', '99thPercentile'],
  ['worker', 'SlavePushDataTime', 'ReplicaPushDataTime', '0.3.0', 'Mean'],
];

/** Releases from the first, in order, as numbers to compare: the test's own reading of KNOWN_RELEASES. */
const ORDER = new Map<string, number>(KNOWN_RELEASES.map((release, index) => [release, index]));

describe('names by release (contract section 9.4)', () => {
  for (const release of KNOWN_RELEASES) {
    it(`a server presenting ${release} renders the names of ${release}`, async () => {
      const names = {
        master: new Set((await scrape(master({ release }))).map((s) => s.name)),
        worker: new Set((await scrape(worker({ release }))).map((s) => s.name)),
      };
      for (const [role, before, after, since, suffix] of RENAMED) {
        const renamed = ORDER.get(release)! >= ORDER.get(since)!;
        const [shown, hidden] = renamed ? [after, before] : [before, after];
        assert.ok(names[role].has(`metrics_${shown}_${suffix}`), `${role} ${release}: ${shown}`);
        assert.ok(!names[role].has(`metrics_${hidden}_${suffix}`), `${role} ${release}: not ${hidden}`);
      }
      // Never renamed: the same name at every release.
      assert.ok(
        names.master.has('metrics_WorkerCount_Value'),
        "names.master.has('metrics_WorkerCount_Value')",
      );
      assert.ok(
        names.worker.has('metrics_WriteDataSuccessCount_Count'),
        "names.worker.has('metrics_WriteDataSuccessCount_Count')",
      );
    });
  }

  it('property: a machine counter of any name renders as metrics_<name in effect>_Count at any release', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...KNOWN_RELEASES),
        fc.constantFrom('master' as const, 'worker' as const),
        fc.stringMatching(/^[A-Za-z][A-Za-z0-9.-]{0,20}$/),
        fc.integer({ min: 1, max: 1000 }),
        async (release, role, name, by) => {
          const metrics = role === 'master' ? master({ release }) : worker({ release });
          metrics.onMetric({ kind: 'metric', name, op: 'inc', value: by });
          const [family] = seriesFamilies(role, release, name, 'counter');
          const samples = await scrape(metrics);
          assert.ok(
            samples.some((s) => s.name === family!.name),
            `${family!.name} in ${samples.map((s) => s.name).join(' ')}`,
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a release older than the history is refused', () => {
    assert.throws(() => master({ release: '0.1.0' }), /predates the release history/);
  });
});

describe('labels', () => {
  it('role (Master, Worker), instance and the extra labels on every series, sorted as the reference renders them', async () => {
    const extraLabels = parseExtraLabels(['zone=a', 'cluster=c1']);
    for (const [metrics, role] of [
      [master({ extraLabels }), 'Master'],
      [worker({ extraLabels }), 'Worker'],
    ] as const) {
      const text = await metrics.render();
      for (const sample of samplesOf(parseExposition(text))) {
        assert.equal(sample.labels['role'], role);
        assert.equal(sample.labels['instance'], role === 'Master' ? 'm1:9098' : 'w1:9096');
        assert.equal(sample.labels['zone'], 'a');
        assert.equal(sample.labels['cluster'], 'c1');
      }
      for (const line of text.split('\n').filter((l) => l.includes('{'))) {
        const pairs = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}')).split(/,(?=[A-Za-z_]+=")/);
        assert.deepEqual(pairs, [...pairs].sort(), line);
      }
    }
  });

  it('an instance given as a function is read at every scrape (the HTTP port is known once it listens)', async () => {
    let port = 0;
    const metrics = master({ instance: () => `m1:${port}` });
    port = 9098;
    assert.equal(valueOf(await scrape(metrics), 'metrics_WorkerCount_Value', { instance: 'm1:9098' }), 0);
  });

  it('extra labels must be name=value and must not name a label svc sets', () => {
    assert.deepEqual(parseExtraLabels([]), {});
    assert.deepEqual(parseExtraLabels(['a=x=y', 'b=']), { a: 'x=y', b: '' });
    assert.throws(() => parseExtraLabels(['zone']), /not name=value/);
    assert.throws(() => parseExtraLabels(['9a=1']), /not name=value/);
    assert.throws(() => parseExtraLabels(['role=x']), /label svc sets itself/);
    assert.throws(() => master({ extraLabels: { instance: 'x' } }), /label svc sets itself/);
  });
});

describe('the exposition', () => {
  it('parses as Prometheus text, and prom-client’s registry holds every family rendered', async () => {
    for (const metrics of [master({ processGauges: true }), worker({ processGauges: true })]) {
      const families = parseExposition(await metrics.render());
      assert.ok(families.size > 10, 'families.size > 10');
      for (const [name, family] of families) {
        assert.ok(metrics.registry.getSingleMetric(name) !== undefined, name);
        assert.ok(family.help !== undefined && family.help.length > 0, `${name} has help`);
        // svc's own families are counters and gauges; Node's process metrics (prom-client's) include histograms.
        if (!/^(process|nodejs)_/.test(name))
          assert.ok(family.type === 'counter' || family.type === 'gauge', `${name} is ${family.type}`);
      }
      for (const name of ['process_open_fds', 'process_max_fds', 'nodejs_eventloop_lag_seconds']) {
        assert.equal(families.get(name)?.type, 'gauge', `${name}, the name Node dashboards query`);
        assert.ok((families.get(name)?.samples[0]?.value ?? -1) >= 0, `${name} has a value`);
      }
      assert.match(metrics.contentType, /^text\/plain; version=0\.0\.4/);
      metrics.close();
    }
  });

  it('every unlabelled metric of the catalogue is rendered from the start, and only those of the role', async () => {
    for (const role of ['master', 'worker'] as const) {
      const metrics = role === 'master' ? master({ processGauges: true }) : worker({ processGauges: true });
      const names = new Set((await scrape(metrics)).map((s) => s.name));
      for (const spec of METRIC_CATALOGUE) {
        if (spec.labels !== undefined) continue;
        for (const family of seriesFamilies(spec.role, '0.6.0', spec.name, spec.kind)) {
          if (spec.role === role) assert.ok(names.has(family.name), `${role}: ${family.name}`);
        }
      }
      assert.equal(names.has('metrics_IsActiveMaster_Value'), role === 'master');
      assert.equal(names.has('metrics_FlushDataTime_Count'), role === 'worker');
      metrics.close();
    }
  });

  it('after a shuffle, the worker renders diskBytesWritten per application, and the section 4.3 query ranks them', async () => {
    const { workers } = runShuffle({ apps: ['app-1', 'app-2', 'app-3'] });
    const all: ExpositionSample[] = [];
    for (const [i, handle] of workers.entries()) {
      const metrics = worker({ instance: `w${i}:9096`, state: () => handle.state() });
      const text = await metrics.render();
      assert.match(
        text,
        /^metrics_diskBytesWritten_Value\{applicationId="app-1",instance="w\d:9096",role="Worker"\} \d+$/m,
      );
      all.push(...samplesOf(parseExposition(text)));
    }
    // A master renders no such series: the query's role matcher keeps it out anyway.
    all.push(...(await scrape(master())));
    const ranked = evaluateTopDiskUsedApps(topDiskUsedAppsQuery(2), all);
    assert.deepEqual(
      ranked.map(([app]) => app),
      ['app-3', 'app-2'],
    );
    const expected = workers.reduce(
      (sum, w) =>
        sum +
        [...w.state().shuffles.values()]
          .filter((s) => s.appId === 'app-3')
          .flatMap((s) => [...s.files.values()])
          .reduce((bytes, f) => bytes + f.bytes, 0),
      0,
    );
    assert.equal(ranked[0]![1], expected);
  });

  it('json() has every family with its labelled values', async () => {
    const json = await master().json();
    const workers = json.find((family) => family.name === 'metrics_WorkerCount_Value');
    assert.deepEqual(workers?.values, [{ labels: { instance: 'm1:9098', role: 'Master' }, value: 0 }]);
    assert.equal(workers?.type, 'gauge');
  });
});

describe('the machine’s metric effects', () => {
  it('counters add up per label set; a gauge the state also gives is rendered from the state', async () => {
    const metrics = master();
    metrics.onMetric({
      kind: 'metric',
      name: 'RequestSlotsFailed',
      op: 'inc',
      value: 1,
      labels: { statusCode: 'A' },
    });
    metrics.onMetric({
      kind: 'metric',
      name: 'RequestSlotsFailed',
      op: 'inc',
      value: 2,
      labels: { statusCode: 'A' },
    });
    metrics.onMetric({
      kind: 'metric',
      name: 'RequestSlotsFailed',
      op: 'inc',
      value: 1,
      labels: { statusCode: 'B' },
    });
    metrics.onMetric({ kind: 'metric', name: 'WorkerCount', op: 'set', value: 42 });
    metrics.onMetric({ kind: 'metric', name: 'SomethingNew', op: 'set', value: 5 });
    metrics.onMetric({ kind: 'metric', name: 'ClientReleaseRefusedCount', op: 'inc', value: Number.NaN });
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_RequestSlotsFailed_Count', { statusCode: 'A' }), 3);
    assert.equal(valueOf(samples, 'metrics_RequestSlotsFailed_Count', { statusCode: 'B' }), 1);
    assert.equal(valueOf(samples, 'metrics_WorkerCount_Value'), 0);
    assert.equal(valueOf(samples, 'metrics_SomethingNew_Value'), 5);
    assert.equal(valueOf(samples, 'metrics_ClientReleaseRefusedCount_Count'), 0);
  });

  it('a label name Prometheus would refuse is normalised rather than failing the scrape', async () => {
    const metrics = worker();
    metrics.onMetric({
      kind: 'metric',
      name: 'Odd',
      op: 'inc',
      value: 1,
      labels: { 'a-b': 'x', '1st': 'y' },
    });
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_Odd_Count', { _a_b: 'x', _1st: 'y' }), 1);
  });

  it('a counter that gains a label keeps its values', async () => {
    const metrics = worker();
    metrics.onMetric({ kind: 'metric', name: 'EvictedFileCount', op: 'inc', value: 2 });
    await metrics.render();
    metrics.onMetric({
      kind: 'metric',
      name: 'EvictedFileCount',
      op: 'inc',
      value: 1,
      labels: { reason: 'x' },
    });
    const samples = await scrape(metrics);
    const evicted = samples.filter((s) => s.name === 'metrics_EvictedFileCount_Count');
    assert.deepEqual(
      evicted.map((s) => [s.labels['reason'], s.value]),
      [
        [undefined, 2],
        ['x', 1],
      ],
    );
  });

  it('every metric the master and workers emit during a shuffle is in the catalogue', () => {
    const { cluster, master: m, workers } = runShuffle();
    const roleOf = new Map<string, 'master' | 'worker'>([
      [m.id, 'master'],
      ...workers.map((w) => [w.id, 'worker'] as const),
    ]);
    for (const record of cluster.metrics) {
      const role = roleOf.get(record.node);
      if (role === undefined) continue;
      assert.ok(
        METRIC_CATALOGUE.some((spec) => spec.role === role && spec.name === record.name),
        `${role} ${record.name}`,
      );
    }
  });
});

describe('the driver’s observations', () => {
  it('writes count per tier kind and time FlushDataTime; memory writes are not flushes', async () => {
    const metrics = worker();
    metrics.observeFileIo('HDD', 100, 2);
    metrics.observeFileIo('SSD', 50, 4);
    metrics.observeFileIo('HDFS', 10, 6);
    metrics.observeFileIo('HDD', 0, 8);
    metrics.observeFileIo('MEMORY', 999, 1000);
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_LocalFlushCount_Count'), 2);
    assert.equal(valueOf(samples, 'metrics_LocalFlushSize_Count'), 150);
    assert.equal(valueOf(samples, 'metrics_HdfsFlushSize_Count'), 10);
    assert.equal(valueOf(samples, 'metrics_FlushDataTime_Count'), 4);
    assert.equal(valueOf(samples, 'metrics_FlushDataTime_Max'), 8);
    assert.equal(valueOf(samples, 'metrics_FlushDataTime_Mean'), 5);
    assert.equal(valueOf(samples, 'metrics_FlushDataTime_50thPercentile'), 5);
  });

  it('pushes, fetches: bytes counted, times in ms rounded to 2 decimals', async () => {
    const metrics = worker();
    metrics.observePush('PRIMARY', 1000);
    metrics.observePush('REPLICA', 300);
    metrics.observePushAnswered('PRIMARY', 1.23456);
    metrics.observeFetchChunk(4096, 3.333333);
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_PrimaryPushDataSize_Count'), 1000);
    assert.equal(valueOf(samples, 'metrics_ReplicaPushDataSize_Count'), 300);
    assert.equal(valueOf(samples, 'metrics_PrimaryPushDataTime_Max'), 1.23);
    assert.equal(valueOf(samples, 'metrics_ReplicaPushDataTime_Count'), 0);
    assert.equal(valueOf(samples, 'metrics_FetchChunkTime_Min'), 3.33);
    assert.equal(valueOf(samples, 'metrics_FetchChunkSize_Count'), 4096);
    assert.equal(valueOf(samples, 'metrics_FetchChunkTransferSize_Max'), 4096);
  });

  it('pauses: counted when they start, status while they last, total time', async () => {
    let now = 1000;
    const metrics = worker({ now: () => now });
    metrics.observePause('push', true);
    metrics.observePause('push', true);
    now = 1500;
    let samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_PausePushData_Count'), 1);
    assert.equal(valueOf(samples, 'metrics_PausePushDataStatus_Value'), 1);
    assert.equal(valueOf(samples, 'metrics_PausePushDataTime_Value'), 500);
    metrics.observePause('push', false);
    now = 2000;
    metrics.observePause('replicate', true);
    metrics.observePause('push', true);
    now = 2100;
    samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_PausePushData_Count'), 2);
    assert.equal(valueOf(samples, 'metrics_PausePushDataTime_Value'), 600);
    assert.equal(valueOf(samples, 'metrics_PausePushDataAndReplicate_Count'), 1);
    assert.equal(valueOf(samples, 'metrics_PausePushDataAndReplicateStatus_Value'), 1);
    assert.equal(valueOf(samples, 'metrics_PausePushDataAndReplicateTime_Value'), 100);
  });

  it('a timer records the sampled fraction of its observations (svc.metrics.sample.rate)', async () => {
    const draws = [0.1, 0.9, 0.2, 0.8];
    const metrics = worker({ sampleRate: 0.5, random: () => draws.shift() ?? 0 });
    for (const ms of [1, 2, 3, 4]) metrics.observePushAnswered('PRIMARY', ms);
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_PrimaryPushDataTime_Count'), 2);
    assert.equal(valueOf(samples, 'metrics_PrimaryPushDataTime_Max'), 3);
  });

  it('the disks’ filesystems, by mount point', async () => {
    const metrics = worker({
      devices: () => Promise.resolve([{ mountPoint: '/mnt/a', totalBytes: 1000, freeBytes: 300 }]),
    });
    const samples = await scrape(metrics);
    assert.equal(valueOf(samples, 'metrics_DeviceOSTotalBytes_Value', { mountpoint: '/mnt/a' }), 1000);
    assert.equal(valueOf(samples, 'metrics_DeviceOSFreeBytes_Value', { mountpoint: '/mnt/a' }), 300);
  });
});

/**
 * The query topDiskUsedAppsQuery() gives, evaluated over scraped samples: it must have exactly the shape
 * `topk(N, sum by (applicationId) (NAME{role="R", applicationId!=""}))`, and is evaluated as PromQL would.
 */
function evaluateTopDiskUsedApps(query: string, samples: readonly ExpositionSample[]): [string, number][] {
  const match = /^topk\((\d+), sum by \(applicationId\) \((\w+)\{role="(\w+)", applicationId!=""\}\)\)$/.exec(
    query,
  );
  assert.ok(match, `unexpected query shape: ${query}`);
  const [, k, name, role] = match;
  const sums = new Map<string, number>();
  for (const s of samples) {
    const app = s.labels['applicationId'] ?? '';
    if (s.name !== name || s.labels['role'] !== role || app === '') continue;
    sums.set(app, (sums.get(app) ?? 0) + s.value);
  }
  return [...sums].sort((a, b) => b[1] - a[1]).slice(0, Number(k));
}
