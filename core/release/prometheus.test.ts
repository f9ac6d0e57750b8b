import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  METRIC_ROLE_LABEL,
  PROMETHEUS_SUFFIXES,
  prometheusMetricName,
  TOP_DISK_USED_APPS_LIMIT,
  topDiskUsedAppsQuery,
} from './prometheus.ts';

describe('Prometheus names (reference section 10.1)', () => {
  it('metrics_<name>_<suffix>', () => {
    assert.equal(prometheusMetricName('WorkerCount', 'Value'), 'metrics_WorkerCount_Value');
    assert.equal(
      prometheusMetricName('OfferSlotsTime', '99thPercentile'),
      'metrics_OfferSlotsTime_99thPercentile',
    );
    assert.equal(prometheusMetricName('jvm.gc-time', 'Count'), 'metrics_jvm_gc_time_Count');
  });

  it('an empty name is an error', () => {
    assert.throws(() => prometheusMetricName('', 'Value'), /must not be empty/);
  });

  it('the series of each kind', () => {
    assert.deepEqual(PROMETHEUS_SUFFIXES.counter, ['Count']);
    assert.deepEqual(PROMETHEUS_SUFFIXES.gauge, ['Value']);
    assert.deepEqual(PROMETHEUS_SUFFIXES.meter, [
      'Count',
      'MeanRate',
      'OneMinuteRate',
      'FiveMinuteRate',
      'FifteenMinuteRate',
    ]);
    assert.deepEqual(PROMETHEUS_SUFFIXES.timer, PROMETHEUS_SUFFIXES.histogram);
    assert.deepEqual(PROMETHEUS_SUFFIXES.timer.slice(0, 4), ['Count', 'Max', 'Mean', 'Min']);
  });

  it('the role label is rendered capitalised, as the reference renders it', () => {
    assert.deepEqual(METRIC_ROLE_LABEL, { master: 'Master', worker: 'Worker', client: 'Client' });
  });

  it('property: every name is a valid Prometheus metric name', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.constantFrom(...PROMETHEUS_SUFFIXES.timer),
        (name, suffix) => {
          const rendered = prometheusMetricName(name, suffix);
          assert.match(rendered, /^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
          assert.ok(
            rendered.startsWith('metrics_') && rendered.endsWith(`_${suffix}`),
            "rendered.startsWith('metrics_') && rendered.endsWith(`_${suffix}`)",
          );
        },
      ),
    );
  });
});

describe('the replacement of /listTopDiskUsedApps (contract sections 4.3 and 8)', () => {
  it('top 50 applications by disk bytes written on workers, non-empty applicationId', () => {
    assert.equal(TOP_DISK_USED_APPS_LIMIT, 50);
    assert.equal(
      topDiskUsedAppsQuery(),
      'topk(50, sum by (applicationId) (metrics_diskBytesWritten_Value{role="Worker", applicationId!=""}))',
    );
  });

  it('another limit', () => {
    assert.equal(
      topDiskUsedAppsQuery(10),
      'topk(10, sum by (applicationId) (metrics_diskBytesWritten_Value{role="Worker", applicationId!=""}))',
    );
  });

  it('a limit that is not a positive integer is an error', () => {
    assert.throws(() => topDiskUsedAppsQuery(0), /positive integer, got 0/);
    assert.throws(() => topDiskUsedAppsQuery(1.5), /positive integer, got 1.5/);
  });
});
