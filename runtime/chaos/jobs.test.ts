// The soak's job stream and its record-by-record comparison (pure pieces of runtime/chaos/jobs.ts and soak.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareRecords, jobClientConf, jobSpec, type JobOutcome } from './jobs.ts';
import type { TimelineEntry } from './injector.ts';
import { notPromisedBecause, tolerated } from './soak.ts';

const job = (replicate: boolean): JobOutcome => ({
  spec: { ...jobSpec('s', 0), replicate },
  appId: 'app',
  startMs: 1_000,
  endMs: 5_000,
  status: 'failed',
  taskFailures: [],
  reruns: 0,
  verification: '',
  clientLog: [],
});
const fault = (worker: number | undefined): TimelineEntry => ({
  fault: {
    index: 0,
    kind: worker === undefined ? 'master-restart' : 'kill',
    atMs: 0,
    holdMs: 0,
    settleMs: 0,
    ...(worker === undefined ? {} : { worker }),
  },
  startMs: 2_000,
  endMs: 3_000,
  notes: [],
});

describe('the soak jobs', () => {
  it('draws the same job from the same seed and position', () => {
    assert.deepEqual(jobSpec('seed', 7), jobSpec('seed', 7));
    assert.notDeepEqual(
      Array.from({ length: 5 }, (_, i) => jobSpec('seed', i)),
      Array.from({ length: 5 }, (_, i) => jobSpec('other', i)),
    );
    assert.ok(
      Array.from({ length: 50 }, (_, i) => jobSpec('x', i, { tiers: ['disk'] })).every(
        (j) => j.tier === 'disk',
      ),
      "Array.from({ length: 50 }, (_, i) => jobSpec('x', i, { tiers: ['disk'] })).every((j) => j.tier === 'disk')",
    );
  });

  it('names the client keys as the job release reads them', () => {
    const conf = jobClientConf({ ...jobSpec('s', 0), release: '0.6.0', tier: 'memory', replicate: true });
    assert.equal(conf['svc.storage.availableTypes'], 'MEMORY,HDD');
    assert.equal(conf['svc.client.push.replicate.enabled'], 'true');
  });

  it('finds missing, duplicated and foreign records, and nothing in an exact match', () => {
    assert.equal(compareRecords(['a', 'b', 'b'], ['b', 'a', 'b']), undefined);
    assert.match(compareRecords(['a'], ['a', 'b']) ?? '', /1 missing \(b\), 0 duplicated/);
    assert.match(
      compareRecords(['a', 'a', 'b'], ['a', 'b']) ?? '',
      /0 missing, 1 duplicated or foreign \(a\)/,
    );
    assert.match(
      compareRecords(['a', 'z'], ['a', 'b']) ?? '',
      /1 missing \(b\), 1 duplicated or foreign \(z\)/,
    );
  });

  it('holds a job to the liveness rule only under faults the design tolerates', () => {
    assert.equal(tolerated(job(false), []), true, 'no fault at all');
    assert.equal(tolerated(job(false), [fault(1)]), false, 'a lost worker without replication');
    assert.equal(
      tolerated(job(true), [fault(1), fault(1), fault(undefined)]),
      true,
      'one worker and the master',
    );
    assert.equal(tolerated(job(true), [fault(1), fault(2)]), false, 'two workers: both copies may be gone');
  });

  it('says why a failure the rule does not cover is excused, naming the faults', () => {
    assert.equal(notPromisedBecause(job(true), [fault(1)]), undefined);
    assert.match(notPromisedBecause(job(false), [fault(1)]) ?? '', /does not replicate.* of worker 1/);
    assert.match(notPromisedBecause(job(true), [fault(1), fault(2)]) ?? '', /struck 2 workers/);
  });
});
