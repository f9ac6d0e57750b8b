import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SimVolume } from './volume.ts';

type Op =
  | { readonly kind: 'append'; readonly bytes: Uint8Array }
  | { readonly kind: 'sync' }
  | { readonly kind: 'crash' }
  | { readonly kind: 'read'; readonly offset: number; readonly length: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), bytes: fc.uint8Array({ maxLength: 9 }) }),
  fc.record({ kind: fc.constant('sync' as const) }),
  fc.record({ kind: fc.constant('crash' as const) }),
  fc.record({ kind: fc.constant('read' as const), offset: fc.nat(40), length: fc.nat(40) }),
);

describe('SimVolume', () => {
  it('reads back exactly what a flat byte array model holds, through appends, syncs and crashes', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(op, { maxLength: 40 }), (volatile, ops) => {
        const volume = new SimVolume(Infinity, volatile);
        assert.equal(volume.create('/f'), undefined);
        let model: number[] = [];
        let synced = 0;
        let exists = true;
        for (const step of ops) {
          if (step.kind === 'append') {
            const result = volume.append('/f', step.bytes);
            if (!exists) {
              assert.equal(result, 'NOT_FOUND');
              continue;
            }
            assert.equal(result, undefined);
            model.push(...step.bytes);
            // The volume keeps its own copy: changing the caller's buffer afterwards changes nothing.
            step.bytes.fill(255);
          } else if (step.kind === 'sync') {
            if (exists) synced = model.length;
            volume.sync('/f');
          } else if (step.kind === 'crash') {
            volume.crash();
            if (volatile) exists = false;
            else model = model.slice(0, synced);
          } else {
            const read = volume.read('/f', step.offset, step.length);
            if (!exists) assert.equal(read, 'NOT_FOUND');
            else
              assert.deepEqual(
                [...(read as Uint8Array)],
                model.slice(step.offset, step.offset + step.length),
              );
          }
          assert.equal(volume.length('/f'), exists ? model.length : undefined);
          assert.equal(volume.used, exists ? model.length : 0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses an append past its capacity, whole', () => {
    const volume = new SimVolume(10, false);
    volume.create('/f');
    assert.equal(volume.append('/f', new Uint8Array(8)), undefined);
    assert.equal(volume.append('/f', new Uint8Array(3)), 'NO_SPACE');
    assert.equal(volume.length('/f'), 8);
    assert.equal(volume.create('/f'), 'EXISTS');
  });

  it('appends a write of several chunks in order, or none of them when they do not all fit', () => {
    const volume = new SimVolume(10, false);
    volume.create('/f');
    assert.equal(volume.appendAll('/f', [Uint8Array.of(1, 2), Uint8Array.of(3)]), undefined);
    assert.equal(volume.appendAll('/f', [new Uint8Array(4), new Uint8Array(4)]), 'NO_SPACE');
    assert.equal(volume.length('/f'), 3, 'nothing of the refused write');
    assert.deepEqual(volume.read('/f', 0, 3), Uint8Array.of(1, 2, 3));
    assert.equal(volume.appendAll('/missing', [Uint8Array.of(1)]), 'NOT_FOUND');
  });

  it('keeps appends and reads of every size whole, larger than its first slab or not (swarm seed 55088)', () => {
    const volume = new SimVolume(Infinity, false);
    const sizes = [10_000, 3, 4_096, 16_384, 16_385, 70_000, 1];
    sizes.forEach((size, i) => {
      const path = `/d/f${i}`;
      volume.create(path);
      const bytes = Uint8Array.from({ length: size }, (_, at) => (at * 7 + i) % 251);
      assert.equal(volume.append(path, bytes), undefined);
      assert.deepEqual(volume.read(path, 0, size), bytes);
    });
  });

  it('reads more files than memfs lets a process hold open (10,000), and reads each again after more appends', () => {
    const volume = new SimVolume(Infinity, false);
    const files = 10_050;
    for (let i = 0; i < files; i += 1) {
      const path = `/d/f${i}`;
      volume.create(path);
      volume.append(path, Uint8Array.of(i % 256));
      assert.deepEqual(volume.read(path, 0, 1), Uint8Array.of(i % 256));
    }
    for (const i of [0, files - 1]) {
      volume.append(`/d/f${i}`, Uint8Array.of(7));
      assert.deepEqual(volume.read(`/d/f${i}`, 0, 2), Uint8Array.of(i % 256, 7));
    }
  });
});
