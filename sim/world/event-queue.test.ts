import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { EventQueue } from './event-queue.ts';

describe('EventQueue', () => {
  it('pops in (time, insertion order) order, whatever the interleaving of pushes and pops', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constant('pop' as const)), { maxLength: 300 }),
        (script) => {
          const queue = new EventQueue<number>();
          const model: { time: number; id: number }[] = [];
          let id = 0;
          for (const step of script) {
            if (step === 'pop') {
              model.sort((a, b) => a.time - b.time || a.id - b.id);
              const expected = model.shift();
              assert.equal(queue.pop()?.event, expected?.id);
            } else {
              queue.push(step, id);
              model.push({ time: step, id });
              id += 1;
            }
            assert.equal(queue.size, model.length);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('keeps equal-time events in the order they were scheduled', () => {
    const queue = new EventQueue<string>();
    for (const name of ['a', 'b', 'c', 'd']) queue.push(5, name);
    queue.push(1, 'first');
    const order: string[] = [];
    for (let item = queue.pop(); item; item = queue.pop()) order.push(item.event);
    assert.deepEqual(order, ['first', 'a', 'b', 'c', 'd']);
  });

  it('refuses a time that is not a finite number', () => {
    const queue = new EventQueue<string>();
    assert.throws(() => queue.push(Number.NaN, 'x'), /cannot schedule an event at time NaN/);
    assert.throws(() => queue.push(Infinity, 'x'), /Infinity/);
  });
});
