// The top-50 query of contract section 4.3 through a real Prometheus against a real local cluster; the judgement
// of an answer against the truth on its own (wrong sums, missing applications, the other spelling); and the rows
// when no Prometheus can be run.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../../runtime/cluster/local-cluster.ts';
import { findPrometheus, PrometheusRun, prometheusConfig } from '../prometheus/server.ts';
import type { RuleRow, Target } from '../report/row.ts';
import {
  agreedReading,
  contractQuery,
  limitRow,
  parseSamples,
  queryRow,
  top50Check,
  truthRow,
  type Answer,
  type Exported,
  type RoleSpelling,
} from './top50.ts';

const TARGET: Target = {
  release: '0.6.0',
  masterUrl: 'http://127.0.0.1:1',
  workerUrls: ['http://127.0.0.1:2'],
  dataUrl: 'svc://127.0.0.1:3',
};

function rowOf(rows: readonly RuleRow[], ruleId: string): RuleRow {
  const found = rows.find((r) => r.ruleId === ruleId);
  assert.ok(found, `a row ${ruleId} among ${rows.map((r) => r.ruleId).join(', ')}`);
  return found;
}

/** `count` applications, app-001 … with 100 × k bytes each. */
function exportedOf(count: number, role = 'Worker'): Exported {
  return {
    byApp: new Map(
      Array.from({ length: count }, (_, i) => [`app-${String(i + 1).padStart(3, '0')}`, 100 * (i + 1)]),
    ),
    roles: new Set([role]),
  };
}

function answersOf(worker: Map<string, number>, lower: Map<string, number>): Map<RoleSpelling, Answer> {
  return new Map<RoleSpelling, Answer>([
    ['Worker', { request: 'GET Worker', byApp: worker }],
    ['worker', { request: 'GET worker', byApp: lower }],
  ]);
}

function top(exported: Exported, n = 50): Map<string, number> {
  return new Map([...exported.byApp].sort((a, b) => b[1] - a[1]).slice(0, n));
}

describe('the section 4.3 query and its judgement', () => {
  it('writes the contract’s query in both spellings of the role label', () => {
    assert.equal(
      contractQuery('Worker'),
      'topk(50, sum by (applicationId) (metrics_diskBytesWritten_Value{role="Worker", applicationId!=""}))',
    );
    assert.match(contractQuery('worker'), /role="worker"/);
  });

  it('passes the spelling that answers the truth and says why the other matches nothing', () => {
    const exported = exportedOf(52);
    const answers = answersOf(top(exported), new Map());
    assert.equal(queryRow(TARGET, 'Worker', answers, exported).verdict, 'pass');
    const lower = queryRow(TARGET, 'worker', answers, exported);
    assert.equal(lower.verdict, 'not-applicable');
    assert.match(lower.evidence, /render role="Worker".*case-sensitive/);
    assert.equal(limitRow(TARGET, answers, exported).verdict, 'pass');
  });

  it('fails an answer with a wrong sum, a missing application or more than 50', () => {
    const exported = exportedOf(52);
    const wrongSum = top(exported);
    wrongSum.set('app-052', 1);
    const wrong = queryRow(TARGET, 'Worker', answersOf(wrongSum, new Map()), exported);
    assert.equal(wrong.verdict, 'fail');
    assert.match(wrong.evidence, /app-052: 1 bytes answered, the workers export 5200/);

    const missing = top(exported);
    missing.delete('app-052');
    missing.set('app-001', 100);
    const gap = queryRow(TARGET, 'Worker', answersOf(missing, new Map()), exported);
    assert.equal(gap.verdict, 'fail');
    assert.match(gap.evidence, /app-001 answered but is not among the top 50/);

    const all = new Map(exported.byApp);
    const tooMany = answersOf(all, new Map());
    assert.match(
      queryRow(TARGET, 'Worker', tooMany, exported).evidence,
      /52 applications answered, 50 expected/,
    );
    assert.equal(limitRow(TARGET, tooMany, exported).verdict, 'fail');
  });

  it('fails both spellings when neither answers, and never passes the limit when it does not bind', () => {
    const exported = exportedOf(3);
    const answers = answersOf(new Map(), new Map());
    assert.equal(queryRow(TARGET, 'Worker', answers, exported).verdict, 'fail');
    assert.equal(queryRow(TARGET, 'worker', answers, exported).verdict, 'fail');
    assert.equal(limitRow(TARGET, answersOf(top(exported), new Map()), exported).verdict, 'not-applicable');
  });

  it('holds the exported bytes to what the applications wrote, and their order', () => {
    const apps = [
      { appId: 'app-001', payload: 100 },
      { appId: 'app-002', payload: 200 },
    ];
    assert.equal(truthRow(TARGET, apps, exportedOf(2)).verdict, 'pass');
    const short: Exported = {
      byApp: new Map([
        ['app-001', 100],
        ['app-002', 150],
      ]),
      roles: new Set(['Worker']),
    };
    const row = truthRow(TARGET, apps, short);
    assert.equal(row.verdict, 'fail');
    assert.match(row.evidence, /app-002 wrote 200 B, exported 150 B/);
  });

  it('reads labels of the text exposition, escapes included', () => {
    const [sample] = parseSamples('metrics_diskBytesWritten_Value{applicationId="a\\"b",role="Worker"} 42\n');
    assert.deepEqual(sample, {
      name: 'metrics_diskBytesWritten_Value',
      labels: { applicationId: 'a"b', role: 'Worker' },
      value: 42,
    });
  });

  it('scrapes each target with its own labels kept', () => {
    const config = prometheusConfig([{ hostPort: '127.0.0.1:9', metricsPath: '/metrics/prometheus' }], '1s');
    assert.match(config, /honor_labels: true/);
    assert.match(config, /targets: \["127\.0\.0\.1:9"\]/);
  });
});

describe('without a prometheus binary', () => {
  it('says not applicable with the reason for every rule, never pass', async () => {
    const rows = await top50Check({ prometheusBinary: '/nonexistent/prometheus' })(TARGET);
    assert.equal(rows.length, 4);
    for (const r of rows) {
      assert.equal(r.verdict, 'not-applicable');
      assert.match(r.evidence, /no prometheus binary.*install\.sh/);
    }
  });

  it('says not applicable before 0.6.0, where /listTopDiskUsedApps still serves', async () => {
    const rows = await top50Check()({ ...TARGET, release: '0.5.1' });
    for (const r of rows) assert.equal(r.verdict, 'not-applicable');
  });
});

const binary = findPrometheus();

describe(
  'the top-50 query through a real Prometheus against a real cluster',
  { skip: binary === undefined ? 'prometheus is not installed (conformance/prometheus/install.sh)' : false },
  () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await LocalCluster.start({ workers: 2 });
    });
    after(async () => {
      await cluster?.stop();
    });

    function target(): Target {
      return {
        release: '0.6.0',
        masterUrl: cluster.masterHttpUrl,
        workerUrls: cluster.workerIds.map((_, i) => cluster.workerHttpUrl(i)),
        dataUrl: cluster.masterUrl,
      };
    }

    it('runs Prometheus on a port of its own, scrapes the workers, and stops it with its directory', async () => {
      const run = await PrometheusRun.start({
        binary: binary!,
        targets: cluster.workerIds.map((_, i) => ({
          hostPort: new URL(cluster.workerHttpUrl(i)).host,
          metricsPath: '/metrics/prometheus',
        })),
      });
      try {
        assert.match(run.url, /^http:\/\/127\.0\.0\.1:\d+$/);
        const states = await run.scrapedAfter(Date.now());
        assert.equal(states.length, 2);
        const { samples } = await run.query('count(metrics_RegisteredShuffleCount_Value{role="Worker"})');
        assert.equal(samples[0]?.value, 2, 'both workers scraped');
      } finally {
        await run.stop();
      }
      assert.equal(run.running, false);
      assert.equal(existsSync(run.dir), false);
      assert.throws(() => process.kill(run.pid!, 0), /ESRCH/);
    });

    it('reads the truth again when a series vanishes between a reading and a scrape', async () => {
      // A worker stand-in: the application "ended" drops out right after the first scrape that follows the
      // first reading of the truth, as a worker drops the series of an application that ends.
      const series = new Map([
        ['kept', 300],
        ['ended', 500],
      ]);
      let truthReadings = 0;
      let armed = false;
      const worker = createServer((request, response) => {
        const scraper = /Prometheus/i.test(request.headers['user-agent'] ?? '');
        if (!scraper) truthReadings += 1;
        response.setHeader('content-type', 'text/plain; version=0.0.4');
        response.end(
          [...series]
            .map(([app, v]) => `metrics_diskBytesWritten_Value{role="Worker",applicationId="${app}"} ${v}`)
            .join('\n') + '\n',
        );
        if (scraper && armed) series.delete('ended');
        if (!scraper) armed = true;
      });
      await new Promise<void>((resolve) => worker.listen(0, '127.0.0.1', resolve));
      const { port } = worker.address() as AddressInfo;
      const run = await PrometheusRun.start({
        binary: binary!,
        targets: [{ hostPort: `127.0.0.1:${port}`, metricsPath: '/metrics' }],
      });
      try {
        const reading = await agreedReading(run, TARGET, [`http://127.0.0.1:${port}/metrics`]);
        assert.ok(!('moved' in reading), `a reading agreed: ${JSON.stringify(reading)}`);
        assert.ok(truthReadings >= 4, `the truth was read again after it moved (${truthReadings} readings)`);
        assert.deepEqual([...reading.truth.byApp], [['kept', 300]]);
        assert.deepEqual([...reading.answers.get('Worker')!.byApp], [['kept', 300]]);
        assert.equal(reading.answers.get('worker')!.byApp.size, 0);
      } finally {
        await run.stop();
        await new Promise((resolve) => worker.close(resolve));
      }
    });

    it('answers the truth for 52 applications, with role="Worker"; role="worker" matches nothing', async () => {
      const rows = await top50Check()(target());
      const upper = rowOf(rows, '4.3/top50-query-role-Worker');
      assert.equal(upper.verdict, 'pass', upper.evidence);
      assert.match(upper.evidence, /→ 50 applications/);
      const lower = rowOf(rows, '4.3/top50-query-role-worker');
      assert.equal(lower.verdict, 'not-applicable', lower.evidence);
      const truth = rowOf(rows, '4.3/disk-bytes-written-truth');
      assert.equal(truth.verdict, 'pass', truth.evidence);
      assert.match(truth.evidence, /52 applications wrote 2048 to 106496 B/);
      assert.equal(rowOf(rows, '8/top-applications-limit').verdict, 'pass');
    });
  },
);
