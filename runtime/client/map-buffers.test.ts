import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig } from '../../conf/resolve.ts';
import { executorMapBuffers, MapBuffers } from './map-buffers.ts';

describe('MapBuffers', () => {
  it('cuts small buffers of exactly their length from shared slabs, never overlapping, and allocates large ones alone', () => {
    const { allocate } = new MapBuffers(1 << 20);
    const cuts = Array.from({ length: 40 }, (_, i) => allocate(4136 + (i % 3)));
    assert.ok(new Set(cuts.map((cut) => cut.buffer)).size < cuts.length / 8, 'chunks share slabs');
    cuts.forEach((cut, i) => cut.fill(i));
    cuts.forEach((cut, i) => {
      assert.equal(cut.length, 4136 + (i % 3));
      assert.ok(
        cut.every((byte) => byte === i),
        `cut ${i} kept its bytes`,
      );
    });
    const large = allocate(64 * 1024);
    assert.equal(large.length, 64 * 1024);
    assert.ok(!cuts.some((cut) => cut.buffer === large.buffer), 'a large buffer has memory of its own');
  });

  it('hands out what was given back for its length, the last given first, and new memory for other lengths', () => {
    const buffers = new MapBuffers(1 << 20);
    const [a, b] = [buffers.allocate(4136), buffers.allocate(4136)];
    const batch = buffers.allocate(65_576);
    buffers.giveBack(a);
    buffers.giveBack(b);
    buffers.giveBack(batch);
    assert.equal(buffers.keptNow, 2 * 4136 + 65_576);
    assert.equal(buffers.allocate(4136), b, 'the most recently given back, likeliest still in cache');
    assert.equal(buffers.allocate(65_576), batch);
    const other = buffers.allocate(100);
    assert.ok(other !== a && other.length === 100, 'another length is new memory');
    assert.equal(buffers.allocate(4136), a);
    assert.notEqual(buffers.allocate(4136), a, 'none kept: new memory');
    assert.equal(buffers.keptNow, 0);
  });

  it('keeps at most its bytes; what does not fit is left to the collector', () => {
    const buffers = new MapBuffers(10_000);
    const given = [4136, 4136, 4136].map((length) => buffers.allocate(length));
    for (const buffer of given) buffers.giveBack(buffer);
    assert.equal(buffers.keptNow, 2 * 4136, 'two fit in 10,000 bytes, the third does not');
    assert.equal(buffers.allocate(4136), given[1]);
    assert.equal(buffers.allocate(4136), given[0]);
    assert.ok(!given.includes(buffers.allocate(4136)), 'the third was not kept');
  });

  it('lets what it keeps go once nothing was allocated between two idle checks', () => {
    const buffers = new MapBuffers(1 << 20);
    const buffer = buffers.allocate(4136);
    buffers.giveBack(buffer);
    buffers.dropIdle();
    assert.equal(buffers.keptNow, 4136, 'allocated since the last check: kept');
    buffers.dropIdle();
    assert.equal(buffers.keptNow, 0, 'idle for a whole period: let go');
    assert.notEqual(buffers.allocate(4136), buffer);
  });

  it('keeps up to svc.client.push.maxUnacknowledgedBytes for an executor', () => {
    const keptOf = (overrides: Record<string, string>) => {
      const conf = resolveConfig({ release: '0.6.0', role: 'client', overrides });
      assert.deepEqual(conf.errors, []);
      const buffers = executorMapBuffers(conf);
      for (let i = 0; i < 1100; i += 1) buffers.giveBack(new Uint8Array(64 * 1024));
      return buffers.keptNow;
    };
    assert.equal(keptOf({ 'svc.client.push.maxUnacknowledgedBytes': '2m' }), 2 * 1024 * 1024);
    assert.equal(keptOf({}), 64 * 1024 * 1024, 'the 64m default');
  });
});
