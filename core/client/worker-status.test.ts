import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  applyMasterReport,
  emptyWorkerStatus,
  excludeWorker,
  expireExclusions,
  isLastingCause,
  releaseWorkers,
} from './worker-status.ts';

describe('the client view of worker status', () => {
  it('keeps a lasting exclusion until exactly the expiry timeout, unless the master lists the worker', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(
          'PUSH_DATA_TIMEOUT_PRIMARY' as const,
          'WORKER_UNRESPONSIVE' as const,
          'RESERVE_SLOTS_FAILED' as const,
        ),
        fc.nat(10 ** 6),
        fc.integer({ min: 1, max: 10 ** 6 }),
        fc.nat(2 * 10 ** 6),
        fc.boolean(),
        (cause, since, expire, elapsed, listed) => {
          const view = excludeWorker(emptyWorkerStatus(), 'w1', cause, since);
          const report = { excluded: listed ? ['w1'] : [], unknown: [], shuttingDown: [] };
          const after = applyMasterReport(view, report, since + elapsed, expire);
          assert.equal(after.excluded.has('w1'), listed || elapsed < expire);
          if (elapsed < expire) assert.deepEqual(after.excluded.get('w1'), { cause, since });
          // Expired but re-confirmed: the master's entry, which lasts as long as the master lists the worker.
          else if (listed)
            assert.deepEqual(after.excluded.get('w1'), { cause: 'WORKER_EXCLUDED', since: since + elapsed });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('expires a lasting exclusion at exactly the timeout at any step, without waiting for a report', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(
          'PUSH_DATA_TIMEOUT_PRIMARY' as const,
          'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY' as const,
          'RESERVE_SLOTS_FAILED' as const,
          'PUSH_DATA_WRITE_FAIL_PRIMARY' as const,
          'WORKER_EXCLUDED' as const,
        ),
        fc.nat(10 ** 6),
        fc.integer({ min: 1, max: 10 ** 6 }),
        fc.nat(2 * 10 ** 6),
        (cause, since, expire, elapsed) => {
          const view = excludeWorker(emptyWorkerStatus(), 'w1', cause, since);
          const { view: after, expired } = expireExclusions(view, since + elapsed, expire);
          // Only lasting causes expire by time; the others follow the master's lists.
          const gone = isLastingCause(cause) && elapsed >= expire;
          assert.equal(after.excluded.has('w1'), !gone);
          assert.deepEqual(expired, gone ? ['w1'] : []);
          if (!gone) assert.equal(after, view);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('does not let a re-confirmed exclusion flap between two reports', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 ** 5 }),
        fc.array(fc.integer({ min: 1, max: 10 ** 5 }), { minLength: 1, maxLength: 20 }),
        (expire, gaps) => {
          let view = excludeWorker(emptyWorkerStatus(), 'w1', 'PUSH_DATA_TIMEOUT_PRIMARY', 0);
          let now = 0;
          for (const gap of gaps) {
            now += gap;
            view = expireExclusions(view, now, expire).view;
            view = applyMasterReport(view, { excluded: ['w1'], unknown: [], shuttingDown: [] }, now, expire);
            // Listed by the master at every report: excluded after every report and between them.
            assert.equal(view.excluded.has('w1'), true);
            assert.equal(
              expireExclusions(view, now + expire * 2, expire).view.excluded.has('w1'),
              !isLastingCause(view.excluded.get('w1')!.cause),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('drops a passing exclusion at the next report that does not list the worker', () => {
    assert.equal(isLastingCause('PUSH_DATA_WRITE_FAIL_PRIMARY'), false);
    const view = excludeWorker(emptyWorkerStatus(), 'w1', 'PUSH_DATA_WRITE_FAIL_PRIMARY', 0);
    assert.equal(
      applyMasterReport(view, { excluded: [], unknown: [], shuttingDown: [] }, 1, 180_000).excluded.size,
      0,
    );
    assert.equal(
      applyMasterReport(view, { excluded: ['w1'], unknown: [], shuttingDown: [] }, 1, 180_000).excluded.size,
      1,
    );
  });

  it("adds the master's excluded and unknown workers and takes its shutting-down set", () => {
    let view = excludeWorker(emptyWorkerStatus(), 'w9', 'WORKER_SHUTDOWN', 0);
    assert.deepEqual([...view.shuttingDown], ['w9']);
    view = applyMasterReport(view, { excluded: ['w1'], unknown: ['w2'], shuttingDown: ['w3'] }, 5, 180_000);
    assert.deepEqual(
      [...view.excluded],
      [
        ['w1', { cause: 'WORKER_EXCLUDED', since: 5 }],
        ['w2', { cause: 'WORKER_UNKNOWN', since: 5 }],
      ],
    );
    assert.deepEqual([...view.shuttingDown], ['w3']);
  });

  it('keeps the first cause and time on a repeat, and lifts exclusions on release', () => {
    let view = excludeWorker(emptyWorkerStatus(), 'w1', 'PUSH_DATA_TIMEOUT_PRIMARY', 10);
    view = excludeWorker(view, 'w1', 'PUSH_DATA_WRITE_FAIL_PRIMARY', 20);
    assert.deepEqual(view.excluded.get('w1'), { cause: 'PUSH_DATA_TIMEOUT_PRIMARY', since: 10 });
    view = releaseWorkers(view, ['w1', 'w2']);
    assert.equal(view.excluded.size, 0);
    assert.equal(releaseWorkers(view, ['w1']), view);
  });
});
