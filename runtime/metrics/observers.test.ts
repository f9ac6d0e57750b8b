import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { PartitionMode, StorageType } from '../../core/domain/index.ts';
import { pushData, pushMergedData } from '../../core/machines/worker/test-kit.ts';
import { envelopeObserver, ioObserver } from './observers.ts';

function recorder() {
  const calls: unknown[][] = [];
  return {
    calls,
    observePush: (mode: PartitionMode, bytes: number) => calls.push(['push', mode, bytes]),
    observePushAnswered: (mode: PartitionMode, ms: number) => calls.push(['answered', mode, ms]),
    observeFileIo: (tier: StorageType, bytes: number, ms: number) => calls.push(['io', tier, bytes, ms]),
    observeFetchChunk: (bytes: number, ms: number) => calls.push(['fetch', bytes, ms]),
  };
}

const FILE = { id: 'app-0/0-0-0', tier: 'HDD' as const, mountPoint: '/disk1' };

describe('envelopeObserver', () => {
  it('counts push bytes and times each push to the reply that answers it', () => {
    const metrics = recorder();
    let now = 100;
    const observer = envelopeObserver(metrics, () => now);
    const single = pushData('app-0', 0, 0, 'PRIMARY', { size: 40 });
    const merged = pushMergedData('app-0', 'REPLICA', [
      { partitionId: 0, size: 10 },
      { partitionId: 1, size: 20 },
    ]);
    observer.received({ from: 'map-1', to: 'w', requestId: 7, message: single });
    observer.received({ from: 'w2', to: 'w', requestId: 7, message: merged });
    now = 130;
    // Another peer's request 7 is not this reply's.
    observer.sent({
      from: 'w',
      to: 'w2',
      inReplyTo: 7,
      message: { type: 'PushMergedDataResponse', statuses: ['SUCCESS', 'SUCCESS'], message: '' },
    });
    now = 150;
    observer.sent({
      from: 'w',
      to: 'map-1',
      inReplyTo: 7,
      message: { type: 'PushDataResponse', status: 'SUCCESS', message: '' },
    });
    const mergedBytes = merged.batches.reduce((sum, b) => sum + b.payload.length, 0);
    assert.deepEqual(metrics.calls, [
      ['push', 'PRIMARY', single.payload.length],
      ['push', 'REPLICA', mergedBytes],
      ['answered', 'REPLICA', 30],
      ['answered', 'PRIMARY', 50],
    ]);
    assert.equal(observer.pending, 0);
  });

  it('property: never holds more than its limit of unanswered pushes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.nat(100), (limit, pushes) => {
        const observer = envelopeObserver(recorder(), () => 0, limit);
        for (let i = 0; i < pushes; i += 1) {
          observer.received({
            from: 'map',
            to: 'w',
            requestId: i,
            message: pushData('app-0', 0, 0, 'PRIMARY'),
          });
        }
        assert.equal(observer.pending, Math.min(limit, pushes));
      }),
    );
  });
});

describe('ioObserver', () => {
  it('writes and flushes on their tier, reads as chunk fetches; failures and other operations are not observed', () => {
    const metrics = recorder();
    const observe = ioObserver(metrics);
    observe({ kind: 'write', op: 1, file: FILE, bytes: new Uint8Array(64) }, { kind: 'ioDone', op: 1 }, 2);
    observe({ kind: 'flush', op: 2, file: FILE }, { kind: 'ioDone', op: 2 }, 3);
    observe(
      { kind: 'read', op: 3, file: FILE, offset: 0, length: 32 },
      { kind: 'ioDone', op: 3, bytes: new Uint8Array(32) },
      4,
    );
    observe(
      { kind: 'write', op: 4, file: FILE, bytes: new Uint8Array(8) },
      { kind: 'ioFailed', op: 4, error: 'IO_ERROR' },
      5,
    );
    observe({ kind: 'createFile', op: 5, file: FILE }, { kind: 'ioDone', op: 5 }, 6);
    assert.deepEqual(metrics.calls, [
      ['io', 'HDD', 64, 2],
      ['io', 'HDD', 0, 3],
      ['fetch', 32, 4],
    ]);
  });
});
