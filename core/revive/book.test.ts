import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { PartitionLocation } from '../domain/index.ts';
import {
  emptyReviveBook,
  finishRevives,
  recordLocations,
  startRevives,
  submitRevives,
  type ReviveAnswer,
  type ReviveBook,
  type ReviveResult,
  type StartedRevive,
} from './book.ts';

const location = (partitionId: number, epoch: number, host = 'h1'): PartitionLocation => ({
  partitionId,
  epoch,
  worker: { host, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 },
  mode: 'PRIMARY',
  storage: { type: 'HDD', mountPoint: '', availableTypes: 2 },
});

type Op =
  | { readonly t: 'submit'; readonly partitionId: number; readonly stale: boolean; readonly copies: number }
  | { readonly t: 'start' }
  | { readonly t: 'finish'; readonly ok: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    t: fc.constant('submit' as const),
    partitionId: fc.integer({ min: 0, max: 4 }),
    stale: fc.boolean(),
    copies: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ t: fc.constant('start' as const) }),
  fc.record({ t: fc.constant('finish' as const), ok: fc.boolean() }),
);

/** Drives the book through `ops` the way a lifecycle manager would, checking the invariants at every step. */
function run(ops: readonly Op[], initialPartitions: number): void {
  let book: ReviveBook<number> = recordLocations(
    emptyReviveBook<number>(),
    Array.from({ length: initialPartitions }, (_, p) => location(p, 0)),
  );
  let nextWaiter = 0;
  let inFlight: StartedRevive[] = [];
  const answered = new Map<number, ReviveAnswer<number>>();
  const highestSeen = new Map<number, number>();

  const take = (answers: readonly ReviveAnswer<number>[]) => {
    for (const answer of answers) {
      assert.ok(!answered.has(answer.waiter), `waiter ${answer.waiter} answered twice`);
      answered.set(answer.waiter, answer);
    }
  };
  const start = () => {
    const before = book;
    const result = startRevives(book);
    book = result.book;
    const ids = result.started.map((s) => s.partitionId);
    assert.equal(new Set(ids).size, ids.length, 'one revive per partition');
    for (const started of result.started) {
      assert.ok(
        !inFlight.some((f) => f.partitionId === started.partitionId),
        'started a partition already in flight',
      );
      const known = before.latest.get(started.partitionId)?.epoch ?? -1;
      assert.ok(started.newEpoch > started.oldEpoch && started.oldEpoch >= known, 'epoch did not grow');
      assert.ok(started.newEpoch > (highestSeen.get(started.partitionId) ?? -1), 'epoch reused');
      // Handed out is spent, even if its reservation fails: workers may hold files of that epoch already.
      highestSeen.set(started.partitionId, started.newEpoch);
    }
    inFlight = [...inFlight, ...result.started];
  };
  const finish = (ok: boolean) => {
    const results: ReviveResult[] = inFlight.map((started) =>
      ok
        ? {
            partitionId: started.partitionId,
            location: location(started.partitionId, started.newEpoch, `h${started.newEpoch}`),
          }
        : { partitionId: started.partitionId, status: 'SLOT_NOT_AVAILABLE', reason: 'test' },
    );
    const before = book;
    const result = finishRevives(book, results);
    book = result.book;
    take(result.answers);
    for (const started of inFlight) {
      const latest = book.latest.get(started.partitionId);
      if (ok) {
        assert.equal(latest?.epoch, started.newEpoch);
        assert.ok(
          started.newEpoch > (before.latest.get(started.partitionId)?.epoch ?? -1),
          'started.newEpoch > (before.latest.get(started.partitionId)?.epoch ?? -1)',
        );
        highestSeen.set(started.partitionId, started.newEpoch);
        const answers = result.answers.filter((a) => a.partitionId === started.partitionId);
        assert.ok(answers.length >= 1, 'answers.length >= 1');
        assert.ok(
          answers.every((a) => a.status === 'SUCCESS' && a.location === latest),
          'waiters got different locations',
        );
      } else {
        assert.equal(latest, before.latest.get(started.partitionId));
      }
      assert.equal(book.pending.has(started.partitionId), false);
    }
    inFlight = [];
  };

  for (const op of ops) {
    if (op.t === 'submit') {
      const latest = book.latest.get(op.partitionId)?.epoch ?? -1;
      const epoch = op.stale ? latest - 1 : latest;
      const requests = Array.from({ length: op.copies }, () => ({
        partitionId: op.partitionId,
        epoch,
        cause: 'PUSH_DATA_WRITE_FAIL_PRIMARY' as const,
        waiter: nextWaiter++,
      }));
      const waitingBefore = book.pending.get(op.partitionId)?.waiters.length;
      const hadPending = waitingBefore !== undefined;
      const result = submitRevives(book, requests);
      book = result.book;
      take(result.answers);
      if (op.stale && !hadPending && latest >= 0) {
        assert.equal(result.answers.length, op.copies, 'a stale request is answered at once');
        assert.ok(
          result.answers.every((a) => a.location?.epoch === latest),
          'result.answers.every((a) => a.location?.epoch === latest)',
        );
      } else {
        assert.equal(result.answers.length, 0, 'a pending revive absorbs requests');
        assert.equal(book.pending.get(op.partitionId)?.waiters.length, (waitingBefore ?? 0) + op.copies);
      }
    } else if (op.t === 'start') start();
    else finish(op.ok);
  }
  start();
  finish(true);
  start();
  finish(true);
  assert.equal(answered.size, nextWaiter, 'some waiter was never answered');
  assert.equal(book.pending.size, 0);
}

describe('the revive book', () => {
  it('answers every request exactly once, one new location per partition, epochs only growing', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 0, max: 5 }), (ops, initial) =>
        run(ops, initial),
      ),
      { numRuns: 300 },
    );
  });

  it('collapses any number of concurrent revives of one partition into one new location', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 9 }), (copies, epoch) => {
        let book = recordLocations(emptyReviveBook<string>(), [location(0, epoch)]);
        const requests = Array.from({ length: copies }, (_, i) => ({
          partitionId: 0,
          epoch,
          cause: 'PUSH_DATA_TIMEOUT_PRIMARY' as const,
          waiter: `map-${i}`,
        }));
        book = submitRevives(book, requests).book;
        const started = startRevives(book);
        assert.equal(started.started.length, 1);
        assert.equal(started.started[0]?.newEpoch, epoch + 1);
        const fresh = location(0, epoch + 1, 'h9');
        const done = finishRevives(started.book, [{ partitionId: 0, location: fresh }]);
        assert.deepEqual(
          done.answers.map((a) => a.waiter),
          requests.map((r) => r.waiter),
        );
        assert.ok(
          done.answers.every((a) => a.location === fresh && a.status === 'SUCCESS'),
          "done.answers.every((a) => a.location === fresh && a.status === 'SUCCESS')",
        );
      }),
      { numRuns: 100 },
    );
  });

  it('lets a request that arrives while the revive is in flight share its answer', () => {
    let book = recordLocations(emptyReviveBook<string>(), [location(4, 2)]);
    book = submitRevives(book, [{ partitionId: 4, epoch: 2, cause: 'HARD_SPLIT', waiter: 'a' }]).book;
    const started = startRevives(book);
    const late = submitRevives(started.book, [
      { partitionId: 4, epoch: 1, cause: 'HARD_SPLIT', waiter: 'b' },
    ]);
    assert.deepEqual(late.answers, []);
    assert.deepEqual(startRevives(late.book).started, [], 'an in-flight revive is not started again');
    const done = finishRevives(late.book, [{ partitionId: 4, location: location(4, 3) }]);
    assert.deepEqual(
      done.answers.map((a) => [a.waiter, a.location?.epoch]),
      [
        ['a', 3],
        ['b', 3],
      ],
    );
  });

  it('keeps the cause of the newest failed epoch and starts from the highest epoch known', () => {
    let book = recordLocations(emptyReviveBook<string>(), [location(1, 5)]);
    book = submitRevives(book, [
      { partitionId: 1, epoch: 5, cause: 'SOFT_SPLIT', waiter: 'a' },
      { partitionId: 1, epoch: 7, cause: 'PUSH_DATA_WRITE_FAIL_REPLICA', waiter: 'b' },
    ]).book;
    const [started] = startRevives(book).started;
    assert.deepEqual(started, {
      partitionId: 1,
      cause: 'PUSH_DATA_WRITE_FAIL_REPLICA',
      oldEpoch: 7,
      newEpoch: 8,
      oldLocation: location(1, 5),
    });
  });

  it('answers every waiter with the failure and keeps the latest location when a revive fails', () => {
    let book = recordLocations(emptyReviveBook<string>(), [location(2, 0)]);
    book = submitRevives(book, [
      { partitionId: 2, epoch: 0, cause: 'PUSH_DATA_TIMEOUT_PRIMARY', waiter: 'a' },
      { partitionId: 2, epoch: 0, cause: 'PUSH_DATA_TIMEOUT_PRIMARY', waiter: 'b' },
    ]).book;
    book = startRevives(book).book;
    const done = finishRevives(book, [{ partitionId: 2, status: 'SLOT_NOT_AVAILABLE', reason: 'no worker' }]);
    assert.deepEqual(done.answers, [
      { waiter: 'a', partitionId: 2, status: 'SLOT_NOT_AVAILABLE', reason: 'no worker' },
      { waiter: 'b', partitionId: 2, status: 'SLOT_NOT_AVAILABLE', reason: 'no worker' },
    ]);
    assert.deepEqual(done.book.latest.get(2), location(2, 0));
  });

  it('revives a partition it has no location for at epoch 0', () => {
    const book = submitRevives(emptyReviveBook<string>(), [
      { partitionId: 9, epoch: -1, cause: 'PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY', waiter: 'a' },
    ]).book;
    const started = startRevives(book);
    assert.equal(started.started[0]?.newEpoch, 0);
    assert.equal(started.started[0]?.oldLocation, undefined);
  });

  it('refuses results for revives that are not in flight, or that carry another partition', () => {
    const book = recordLocations(emptyReviveBook<string>(), [location(1, 0)]);
    assert.throws(
      () => finishRevives(book, [{ partitionId: 1, location: location(1, 1) }]),
      /no revive in flight/,
    );
    const pending = submitRevives(book, [
      { partitionId: 1, epoch: 0, cause: 'HARD_SPLIT', waiter: 'a' },
    ]).book;
    assert.throws(
      () => finishRevives(pending, [{ partitionId: 1, location: location(1, 1) }]),
      /no revive in flight/,
    );
    const flying = startRevives(pending).book;
    assert.throws(
      () => finishRevives(flying, [{ partitionId: 1, location: location(2, 1) }]),
      /carries a location of partition 2/,
    );
  });

  it('keeps the newest epoch when recording locations out of order', () => {
    const book = recordLocations(emptyReviveBook<string>(), [location(0, 3), location(0, 1)]);
    assert.equal(book.latest.get(0)?.epoch, 3);
  });

  it("reuses the old epoch under the planted bug 'epoch-not-increased'", () => {
    let book = recordLocations(emptyReviveBook<string>(), [location(0, 4)]);
    book = submitRevives(book, [{ partitionId: 0, epoch: 4, cause: 'HARD_SPLIT', waiter: 'a' }]).book;
    assert.equal(startRevives(book, { plantedBug: 'epoch-not-increased' }).started[0]?.newEpoch, 4);
    assert.equal(startRevives(book).started[0]?.newEpoch, 5);
  });
});
