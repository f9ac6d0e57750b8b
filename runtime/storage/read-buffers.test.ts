import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ReadBuffers } from './read-buffers.ts';

const MiB = 1 << 20;

type Step =
  { readonly kind: 'take'; readonly length: number } | { readonly kind: 'giveBack'; readonly which: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), length: fc.integer({ min: 0, max: 5 * MiB }) }),
  fc.record({ kind: fc.constant('giveBack' as const), which: fc.nat() }),
);

describe('the read buffers of a worker', () => {
  it('property: never lends a buffer that is still out, keeps at most its budget, ignores what it did not lend', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 12 * MiB }),
        fc.array(step, { maxLength: 60 }),
        (budget, steps) => {
          const buffers = new ReadBuffers(budget);
          const out: { readonly view: Uint8Array; readonly fill: number }[] = [];
          let fills = 0;
          for (const s of steps) {
            if (s.kind === 'take') {
              const view = buffers.take(s.length);
              assert.equal(view.byteLength, s.length);
              // Lent buffers (and large ones of their own) are whole MiB; small ones may share Node's slab.
              if (view.buffer.byteLength >= MiB) {
                for (const other of out) assert.notEqual(other.view.buffer, view.buffer);
              }
              // What is read into it stays as read until it is given back.
              const fill = (fills += 1) % 251;
              view.fill(fill);
              out.push({ view, fill });
            } else if (out.length > 0) {
              const [taken] = out.splice(s.which % out.length, 1);
              buffers.giveBack([taken!.view, taken!.view, new Uint8Array(MiB)]);
            }
            assert.ok(buffers.keptBytes <= budget, `${buffers.keptBytes} kept over a budget of ${budget}`);
            for (const { view, fill } of out) {
              if (view.byteLength === 0) continue;
              for (const at of [0, view.byteLength >> 1, view.byteLength - 1]) assert.equal(view[at], fill);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('lends a buffer given back again for a chunk of about the same size, and a fresh one while it is out', () => {
    const buffers = new ReadBuffers(64 * MiB);
    const first = buffers.take(8 * MiB + 100);
    const second = buffers.take(8 * MiB + 5_000);
    assert.notEqual(second.buffer, first.buffer, 'the first is still out');
    buffers.giveBack([first]);
    assert.equal(buffers.keptBytes, 9 * MiB);
    const third = buffers.take(8 * MiB + 200);
    assert.equal(third.buffer, first.buffer, 'reused');
    assert.equal(buffers.keptBytes, 0);
    // Another size class is not served from it.
    buffers.giveBack([third]);
    assert.notEqual(buffers.take(2 * MiB).buffer, first.buffer);
  });

  it('takes a buffer back once, however often it is given back', () => {
    const buffers = new ReadBuffers(64 * MiB);
    const view = buffers.take(4 * MiB);
    buffers.giveBack([view, view.subarray(0, 10), view]);
    buffers.giveBack([view]);
    assert.equal(buffers.keptBytes, 4 * MiB);
    const again = buffers.take(4 * MiB);
    assert.equal(again.buffer, view.buffer);
    assert.notEqual(buffers.take(4 * MiB).buffer, again.buffer, 'never lent twice at once');
  });

  it('keeps nothing beyond its budget: the rest is left to the collector', () => {
    const buffers = new ReadBuffers(2 * MiB);
    const views = [buffers.take(MiB), buffers.take(MiB), buffers.take(MiB)];
    buffers.giveBack(views);
    assert.equal(buffers.keptBytes, 2 * MiB);
    const big = buffers.take(3 * MiB);
    buffers.giveBack([big]);
    assert.equal(buffers.keptBytes, 2 * MiB, 'a buffer over the budget is never kept');
  });
});
