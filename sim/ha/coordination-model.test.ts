import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { fenceCompares } from '../../core/ha/fencing.ts';
import type { StoreResult } from '../../core/ha/store.ts';
import { CoordinationModel } from './coordination-model.ts';

const ELECTION = '/e/';

function only(
  results: readonly { to: string; result: StoreResult }[],
  kind: StoreResult['kind'],
): StoreResult {
  const found = results.filter((r) => r.result.kind === kind);
  assert.equal(found.length, 1, `one ${kind} in ${JSON.stringify(results)}`);
  return found[0]!.result;
}

function grant(model: CoordinationModel, from: string, now: number): string {
  const granted = only(model.serve(from, { kind: 'leaseGrant', op: 1, ttlMs: 8_000 }, now), 'leaseGranted');
  assert.equal(granted.kind, 'leaseGranted');
  return granted.kind === 'leaseGranted' ? granted.lease : '';
}

describe('the coordination store model', () => {
  it('elects the oldest candidate, and the next when the leader’s lease ends at the store’s clock', () => {
    const model = new CoordinationModel(1.01, ELECTION);
    const a = grant(model, 'a', 0);
    const b = grant(model, 'b', 0);
    const won = only(
      model.serve('a', { kind: 'campaign', op: 2, election: ELECTION, lease: a, value: 'a' }, 1),
      'campaignWon',
    );
    assert.deepEqual(
      model.serve('b', { kind: 'campaign', op: 2, election: ELECTION, lease: b, value: 'b' }, 2),
      [],
    );
    assert.equal(model.nextExpiry(), 8_000 / 1.01, 'a lease ends after its TTL on the store’s clock');
    model.serve('b', { kind: 'leaseKeepAlive', op: 3, lease: b }, 5_000);
    const next = model.expire(8_000 / 1.01);
    assert.equal(only(next, 'campaignWon').kind, 'campaignWon');
    assert.equal(model.leaderOf(ELECTION)?.value, 'b');
    assert.equal(won.kind, 'campaignWon');
    if (won.kind !== 'campaignWon') return;
    // a's fenced write is refused now that its key is gone.
    const fence = fenceCompares({ key: won.key, createRevision: won.revision, lease: a });
    const refused = only(
      model.serve(
        'a',
        { kind: 'txn', op: 4, txn: { fence, compares: [], ops: [{ kind: 'put', key: '/s/k', value: 'v' }] } },
        8_000,
      ),
      'refused',
    );
    assert.deepEqual(refused.kind === 'refused' && refused.fenceHeld, false);
  });

  it('applies a transaction wholly or not at all, at one new revision', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            key: fc.constantFrom('/s/a', '/s/b', '/s/c'),
            value: fc.string(),
            stale: fc.boolean(),
          }),
          {
            maxLength: 30,
          },
        ),
        (writes) => {
          const model = new CoordinationModel(1, ELECTION);
          for (const [i, w] of writes.entries()) {
            const before = model.range('/s/');
            const revision = model.currentRevision;
            const stored = before.find((k) => k.key === w.key);
            const compare = w.stale
              ? { key: w.key, target: 'modRevision' as const, equals: (stored?.modRevision ?? 0) + 1 }
              : { key: w.key, target: 'modRevision' as const, equals: stored?.modRevision ?? 0 };
            const txn = {
              fence: [],
              compares: [compare],
              ops: [
                { kind: 'put' as const, key: w.key, value: w.value },
                { kind: 'delete' as const, key: '/s/z' },
              ],
            };
            const result = only(
              model.serve('x', { kind: 'txn', op: i, txn }, i),
              w.stale ? 'refused' : 'committed',
            );
            if (w.stale) assert.deepEqual(model.range('/s/'), before, 'nothing applied');
            else {
              assert.equal(result.kind === 'committed' && result.revision, revision + 1, 'one new revision');
              assert.equal(
                model.range('/s/').find((k) => k.key === w.key)?.modRevision,
                revision + 1,
                'the put at it',
              );
            }
          }
        },
      ),
    );
  });
});
