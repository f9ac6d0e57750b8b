import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MASK, workerKey, type DiskInfo, type WorkerInfo } from '../domain/index.ts';
import { bookOfferedSlots, emptyRegistry } from '../lifecycle/registry.ts';
import { replayRng } from '../rng.ts';
import { offerSlots } from './offer.ts';
import { waterFill } from './shared-filesystems.ts';
import type { OfferOptions, SlotRequest } from './types.ts';

const EST = 1_000;

function worker(i: number, host: string, disks: DiskInfo[]): WorkerInfo {
  return {
    id: { host, rpcPort: 10 * i + 1, pushPort: 10 * i + 2, fetchPort: 10 * i + 3, replicatePort: 10 * i + 4 },
    networkLocation: '/r',
    state: 'Normal',
    lastHeartbeat: 0,
    highWorkload: false,
    disks,
  };
}

function disk(
  mountPoint: string,
  ownSlots: number,
  filesystem?: { readonly id: string; readonly slots: number },
): DiskInfo {
  return {
    mountPoint,
    type: 'HDD',
    usableBytes: ownSlots * EST,
    totalBytes: 2 ** 40,
    status: 'HEALTHY',
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
    ...(filesystem === undefined
      ? {}
      : { filesystem: filesystem.id, filesystemUsableBytes: filesystem.slots * EST }),
  };
}

const STRICT: OfferOptions = {
  policy: { name: 'ROUNDROBIN' },
  budgetMode: 'strict',
  estimatedPartitionSize: EST,
  maxWorkers: 100,
  extraSlots: 0,
};

function ask(partitions: number, replicate: boolean): SlotRequest {
  return {
    partitionIds: Array.from({ length: partitions }, (_, i) => i),
    replicate,
    rackAware: false,
    availableStorageTypes: MASK.LOCAL,
    maxWorkers: 0,
    excludedWorkers: new Set(),
  };
}

describe('waterFill', () => {
  it('shares a total over capped claims: within caps, all of it that fits, evenly', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(20), { minLength: 1, maxLength: 6 }), fc.nat(100), (caps, total) => {
        const shares = waterFill(caps, total);
        const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
        shares.forEach((share, i) => assert.ok(share >= 0 && share <= caps[i]!, `share ${i} within its cap`));
        assert.equal(sum(shares), Math.min(total, sum(caps)), 'all of the total that fits is shared');
        // Even: a claim left under its cap has at least what any other claim got, less one.
        shares.forEach((share, i) => {
          if (share < caps[i]!)
            assert.ok(
              shares.every((other) => other <= share + 1),
              'evenly shared',
            );
        });
      }),
    );
  });
});

describe('slot offers on a filesystem two workers share', () => {
  it('count its space once: two workers of one host, each reporting all of it, get its budget between them', () => {
    const shared = { id: '64769', slots: 4 };
    const workers = [
      worker(0, 'h', [disk('/d', 4, shared)]),
      worker(1, 'h', [disk('/d', 4, shared)]),
      worker(2, 'other', [disk('/d', 4, shared)]),
    ];
    const offer = offerSlots(ask(12, false), workers, STRICT, replayRng([0.1, 0.6, 0.3]));
    const placed = (i: number) => offer.diskAllocations.get(workerKey(workers[i]!.id))?.get('/d') ?? 0;
    assert.equal(placed(0) + placed(1), 4, 'host h’s filesystem holds 4 slots in all, not 8');
    assert.equal(placed(2), 4, 'the same device number on another host is another filesystem');
    assert.equal(offer.unplaced.length, 4);
  });

  it('never offer more on a shared filesystem than its budget, nor on a disk more than its own', () => {
    const diskSpec = fc.record({
      ownSlots: fc.nat(8),
      filesystem: fc.constantFrom(undefined, 'fs-a', 'fs-b'),
    });
    const scenario = fc.record({
      workers: fc.array(
        fc.record({ host: fc.nat(1), disks: fc.array(diskSpec, { minLength: 1, maxLength: 3 }) }),
        {
          minLength: 1,
          maxLength: 5,
        },
      ),
      filesystemSlots: fc.record({ 'fs-a': fc.nat(10), 'fs-b': fc.nat(10) }),
      partitions: fc.nat(40),
      replicate: fc.boolean(),
      draws: fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 4, maxLength: 4 }),
    });
    fc.assert(
      fc.property(scenario, (v) => {
        const workers = v.workers.map((spec, i) =>
          worker(
            i,
            `host${spec.host}`,
            spec.disks.map((d, k) =>
              disk(
                `/d${k}`,
                // A disk's own figure is at most its filesystem's (usableDiskBytes).
                d.filesystem === undefined
                  ? d.ownSlots
                  : Math.min(d.ownSlots, v.filesystemSlots[d.filesystem]),
                d.filesystem === undefined
                  ? undefined
                  : { id: d.filesystem, slots: v.filesystemSlots[d.filesystem] },
              ),
            ),
          ),
        );
        const offer = offerSlots(ask(v.partitions, v.replicate), workers, STRICT, replayRng(v.draws));
        const onFilesystem = new Map<string, number>();
        for (const w of workers) {
          for (const d of w.disks) {
            const slots = offer.diskAllocations.get(workerKey(w.id))?.get(d.mountPoint) ?? 0;
            assert.ok(
              slots * EST <= d.usableBytes,
              `${workerKey(w.id)}${d.mountPoint} within its own budget`,
            );
            if (d.filesystem === undefined) continue;
            const key = `${w.id.host}/${d.filesystem}`;
            onFilesystem.set(key, (onFilesystem.get(key) ?? 0) + slots);
          }
        }
        for (const [key, slots] of onFilesystem) {
          const filesystem = key.slice(key.indexOf('/') + 1) as 'fs-a' | 'fs-b';
          assert.ok(slots <= v.filesystemSlots[filesystem], `${key}: ${slots} slots within its budget`);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('book an offer on a shared filesystem against every disk of the host on it', () => {
    const shared = { id: '64769', slots: 10 };
    const workers = [
      worker(0, 'h', [disk('/d', 10, shared)]),
      worker(1, 'h', [disk('/d', 10, shared), disk('/own', 10)]),
      worker(2, 'other', [disk('/d', 10, shared)]),
    ];
    const registry = {
      ...emptyRegistry(),
      workers: new Map(workers.map((w) => [workerKey(w.id), { ...w, stateSince: 0 }])),
    };
    const booked = bookOfferedSlots(
      registry,
      new Map([[workerKey(workers[0]!.id), new Map([['/d', 3]])]]),
      EST,
    );
    const after = (i: number, mount: string) =>
      booked.registry.workers.get(workerKey(workers[i]!.id))!.disks.find((d) => d.mountPoint === mount)!;
    assert.equal(after(0, '/d').usableBytes, 7 * EST, 'the offered disk');
    assert.equal(after(0, '/d').filesystemUsableBytes, 7 * EST);
    assert.equal(
      after(1, '/d').usableBytes,
      10 * EST,
      'the other worker’s own figure until its next heartbeat',
    );
    assert.equal(
      after(1, '/d').filesystemUsableBytes,
      7 * EST,
      'but the filesystem it shares lost the booked space',
    );
    assert.equal(after(1, '/own').filesystemUsableBytes, undefined, 'a disk of its own is untouched');
    assert.equal(after(2, '/d').filesystemUsableBytes, 10 * EST, 'another host’s filesystem is untouched');
  });
});
