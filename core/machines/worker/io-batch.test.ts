import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect, FileRef } from '../effects.ts';
import { groupIo, isBatchable } from './io-batch.ts';

const file = (id: string): FileRef => ({ id, tier: 'HDD', mountPoint: '/disk1' });
const create = (op: number, id = `f${op}`): Effect => ({ kind: 'createFile', op, file: file(id) });
const write = (op: number, id = `f${op}`): Effect => ({
  kind: 'write',
  op,
  file: file(id),
  bytes: new Uint8Array(1),
});
const remove = (id: string): Effect => ({ kind: 'deleteFile', file: file(id) });
const log = (event: string): Effect => ({ kind: 'log', level: 'info', event });

describe('groupIo', () => {
  it('leaves a step with at most one I/O operation as it is', () => {
    const none = [log('a'), remove('x')];
    assert.equal(groupIo(none), none);
    const one = [log('a'), write(1), log('b')];
    assert.equal(groupIo(one), one);
  });

  it('puts every I/O operation in one batch at the place of the first, keeping the order of everything else', () => {
    const flush: Effect = { kind: 'flush', op: 3, file: file('c') };
    const read: Effect = { kind: 'read', op: 4, file: file('d'), offset: 0, length: 2 };
    const move: Effect = { kind: 'moveFile', op: 5, file: file('e'), to: { ...file('e'), tier: 'SSD' } };
    const effects = [log('a'), create(1), log('b'), write(2), flush, remove('z'), read, move, log('c')];
    assert.deepEqual(groupIo(effects), [
      log('a'),
      { kind: 'ioBatch', ops: [create(1), write(2), flush, read, move] },
      log('b'),
      remove('z'),
      log('c'),
    ]);
  });

  it('does not move an operation ahead of a deleteFile of the same file', () => {
    const hazard = [create(1, 'a'), remove('b'), create(2, 'b')];
    assert.equal(groupIo(hazard), hazard);
    const safe = [remove('b'), create(1, 'a'), create(2, 'b')];
    assert.deepEqual(groupIo(safe), [
      remove('b'),
      { kind: 'ioBatch', ops: [create(1, 'a'), create(2, 'b')] },
    ]);
  });

  it('keeps every effect, in order once the batch is unfolded, with at most one batch', () => {
    const effectArb = fc.oneof(
      fc.integer({ min: 0, max: 3 }).map((n) => log(`e${n}`)),
      fc.integer({ min: 0, max: 3 }).map((n) => remove(`f${n}`)),
      fc
        .tuple(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 0, max: 3 }))
        .map(([op, n]) => write(op, `f${n}`)),
      fc
        .tuple(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 0, max: 3 }))
        .map(([op, n]) => create(op, `f${n}`)),
    );
    fc.assert(
      fc.property(fc.array(effectArb, { maxLength: 12 }), (effects) => {
        const grouped = groupIo(effects);
        const batches = grouped.filter((effect) => effect.kind === 'ioBatch');
        assert.ok(batches.length <= 1, 'batches.length <= 1');
        const unfolded = grouped.flatMap((effect): readonly Effect[] =>
          effect.kind === 'ioBatch' ? effect.ops : [effect],
        );
        assert.deepEqual(
          unfolded.filter((effect) => isBatchable(effect)),
          effects.filter((effect) => isBatchable(effect)),
          'the I/O operations, in their order',
        );
        assert.deepEqual(
          grouped.filter((effect) => effect.kind !== 'ioBatch' && !isBatchable(effect)),
          effects.filter((effect) => !isBatchable(effect)),
          'the other effects, in their order',
        );
        const operations = effects.filter((effect) => isBatchable(effect)).length;
        if (operations < 2) assert.equal(grouped, effects);
        if (batches.length === 1) {
          const first = effects.findIndex((effect) => isBatchable(effect));
          assert.equal(grouped[first]?.kind, 'ioBatch', 'the batch takes the first operation’s place');
          // No operation now runs before a deleteFile of its file that preceded it.
          const deletedBefore = new Set<string>();
          for (const effect of effects.slice(first)) {
            if (effect.kind === 'deleteFile') deletedBefore.add(effect.file.id);
            else if (isBatchable(effect))
              assert.ok(!deletedBefore.has(effect.file.id), '!deletedBefore.has(effect.file.id)');
          }
        } else if (operations >= 2) {
          assert.equal(
            grouped,
            effects,
            'left as it is only to keep a deleteFile before its file’s operation',
          );
        }
      }),
      { numRuns: 300 },
    );
  });
});
