import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  applyMasterReport,
  emptyWorkerStatus,
  excludeWorker,
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
          if (after.excluded.has('w1')) assert.deepEqual(after.excluded.get('w1'), { cause, since });
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
