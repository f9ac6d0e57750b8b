import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { WorkerId } from '../domain/index.ts';
import {
  emptyApplications,
  emptyRegistry,
  restoreApplications,
  restoreRegistry,
  snapshotApplications,
  snapshotRegistry,
} from '../lifecycle/index.ts';
import { newBooking } from '../machines/master/bookings.ts';
import type { MasterDurableState } from '../machines/master/state.ts';
import { compareHolds, type Fence, type KnownKey } from './fencing.ts';
import {
  afterCommit,
  assembleDurable,
  changesBetween,
  DEFAULT_TXN_LIMITS,
  durableLayout,
  opBytes,
  planWrites,
  type TxnLimits,
} from './key-layout.ts';
import type { Txn } from './store.ts';

const PREFIX = '/svc/test/state/';
const EMPTY: MasterDurableState = {
  workers: emptyRegistry(),
  applications: emptyApplications(),
  estimatedPartitionSize: 64 * 1024 * 1024,
  bookings: new Map(),
};

const workerId: fc.Arbitrary<WorkerId> = fc.record({
  host: fc.stringMatching(/^[a-z0-9./-]{1,12}$/),
  rpcPort: fc.integer({ min: 1, max: 65_535 }),
  pushPort: fc.integer({ min: 1, max: 65_535 }),
  fetchPort: fc.integer({ min: 1, max: 65_535 }),
  replicatePort: fc.integer({ min: 1, max: 65_535 }),
});

const disk = fc.record({
  mountPoint: fc.constantFrom('/d1', '/d2'),
  type: fc.constant('HDD' as const),
  usableBytes: fc.nat(),
  totalBytes: fc.nat(),
  status: fc.constant('HEALTHY' as const),
  avgFlushTimeNs: fc.constant(0),
  avgFetchTimeNs: fc.constant(0),
  activeSlots: fc.nat(50),
});

const worker = fc.record({
  id: workerId,
  disks: fc.uniqueArray(disk, { selector: (d) => d.mountPoint, maxLength: 2 }),
  networkLocation: fc.constantFrom('/default-rack', '/r1'),
  state: fc.constant('Normal'),
  lastHeartbeat: fc.nat(),
  highWorkload: fc.boolean(),
  stateSince: fc.nat(),
});

/**
 * A durable state with distinct workers in each section, applications with shuffles (ids of any text), and a slot
 * booking of every other registered worker with disks, made after their heartbeats (so restoring it changes nothing).
 */
const durableState: fc.Arbitrary<MasterDurableState> = fc
  .record({
    workers: fc.uniqueArray(worker, { selector: (w) => JSON.stringify(w.id), maxLength: 6 }),
    lost: fc.uniqueArray(worker, { selector: (w) => JSON.stringify(w.id), maxLength: 3 }),
    excluded: fc.uniqueArray(workerId, { selector: (id) => JSON.stringify(id), maxLength: 3 }),
    apps: fc.uniqueArray(
      fc.record({
        appId: fc.string({ minLength: 1, maxLength: 12 }),
        lastHeartbeat: fc.nat(),
        shuffles: fc.uniqueArray(fc.nat(1000), { maxLength: 5 }),
        secret: fc.option(fc.string(), { nil: undefined }),
      }),
      { selector: (a) => a.appId, maxLength: 5 },
    ),
    size: fc.nat(),
  })
  .map(({ workers, lost, excluded, apps, size }) => {
    const registered = new Set(workers.map((w) => JSON.stringify(w.id)));
    const registry = restoreRegistry({
      ...snapshotRegistry(emptyRegistry()),
      workers,
      lost: lost
        .filter((w) => !registered.has(JSON.stringify(w.id)))
        .map((info) => ({ info, lostAt: info.lastHeartbeat })),
      manuallyExcluded: excluded.map((id) => ({ id, since: 1 })),
    });
    const booked = [...registry.workers.keys()].filter((_, i) => i % 2 === 0);
    // The booking compares disks by identity: copies stand for the disks before it.
    const before = {
      ...registry,
      workers: new Map(
        [...registry.workers].map(([key, w]) => [key, { ...w, disks: w.disks.map((d) => ({ ...d })) }]),
      ),
    };
    const at = Math.max(0, ...workers.map((w) => w.lastHeartbeat));
    const booking = newBooking(before, registry, booked, at);
    return {
      workers: registry,
      applications: restoreApplications({
        version: 1,
        apps: apps.map(({ secret, ...app }) => ({ ...app, ...(secret === undefined ? {} : { secret }) })),
        writtenSinceSample: { bytes: 0, files: 0 },
      }),
      estimatedPartitionSize: size,
      bookings: new Map(booking === null ? [] : [[3, booking]]),
    };
  });

/** A state as comparable data: sections and applications sorted, shuffles sorted (the layout keeps no order). */
function canonical(durable: MasterDurableState): unknown {
  const workers = snapshotRegistry(durable.workers);
  const sorted = Object.fromEntries(
    Object.entries(workers).map(([k, v]) => [
      k,
      Array.isArray(v) ? (v as readonly unknown[]).map((e) => JSON.stringify(e)).sort() : v,
    ]),
  );
  const apps = snapshotApplications(durable.applications);
  return {
    sorted,
    apps: apps.apps
      .map((a) => JSON.stringify({ ...a, shuffles: [...a.shuffles].sort((x, y) => x - y) }))
      .sort(),
    sample: apps.writtenSinceSample,
    size: durable.estimatedPartitionSize,
    bookings: [...durable.bookings].map(([id, booking]) => [id, booking.at, [...booking.parts]]),
  };
}

const FENCE: Fence = { key: '/svc/test/election/1', createRevision: 7, lease: '42' };

/** A store of data keys with revisions, applying transactions as etcd would (fence assumed held). */
function apply(store: Map<string, KnownKey>, txn: Txn, revision: number): boolean {
  for (const compare of txn.compares) {
    const stored = store.get(compare.key);
    const asStored =
      stored === undefined
        ? undefined
        : { key: compare.key, value: stored.value, createRevision: 1, modRevision: stored.modRevision };
    if (!compareHolds(compare, asStored)) return false;
  }
  afterCommit(store, txn, revision);
  return true;
}

const limits: fc.Arbitrary<TxnLimits> = fc.record({
  maxOps: fc.integer({ min: 3, max: 128 }),
  maxBytes: fc.integer({ min: 2_000, max: 20_000 }),
});

describe('the durable state key layout', () => {
  it('reads back what it wrote, from keys in any order', () => {
    fc.assert(
      fc.property(durableState, fc.nat(), (durable, rotation) => {
        const entries = [...durableLayout(PREFIX, durable)].map(([key, value]) => ({ key, value }));
        const rotated = [
          ...entries.slice(rotation % entries.length),
          ...entries.slice(0, rotation % entries.length),
        ];
        assert.deepEqual(canonical(assembleDurable(PREFIX, rotated, EMPTY)), canonical(durable));
      }),
    );
  });

  it('puts one key per worker entry, application, shuffle and booking part, all under the prefix', () => {
    fc.assert(
      fc.property(durableState, (durable) => {
        const layout = durableLayout(PREFIX, durable);
        const shuffles = [...durable.applications.apps.values()].reduce((n, a) => n + a.shuffles.length, 0);
        const workers =
          durable.workers.workers.size + durable.workers.lost.size + durable.workers.manuallyExcluded.size;
        const parts = [...durable.bookings.values()].reduce((n, b) => n + b.parts.size, 0);
        assert.equal(layout.size, 1 + workers + durable.applications.apps.size + shuffles + parts);
        for (const key of layout.keys()) assert.ok(key.startsWith(PREFIX), `${key} is under the prefix`);
      }),
    );
  });

  it('an empty store is a new cluster; a missing meta key or an orphan shuffle is refused, naming the key', () => {
    assert.equal(assembleDurable(PREFIX, [], EMPTY), EMPTY);
    assert.throws(
      () => assembleDurable(PREFIX, [{ key: `${PREFIX}apps/a`, value: '{"appId":"a"}' }], EMPTY),
      /meta is missing/,
    );
    const layout = durableLayout(PREFIX, EMPTY);
    const orphan = [...layout].map(([key, value]) => ({ key, value }));
    orphan.push({ key: `${PREFIX}shuffles/gone/3`, value: '{}' });
    assert.throws(
      () => assembleDurable(PREFIX, orphan, EMPTY),
      /shuffles\/gone\/ has shuffles of no application/,
    );
  });
});

describe('planWrites', () => {
  it('writes only what changed, in fenced compare-and-swap transactions within the limits, reaching the next state', () => {
    fc.assert(
      fc.property(durableState, durableState, limits, (before, after, bounds) => {
        const store = new Map<string, KnownKey>();
        let revision = 10;
        const first = planWrites(PREFIX, new Map(), durableLayout(PREFIX, before), FENCE, bounds);
        assert.equal(first.kind, 'txns');
        for (const txn of first.kind === 'txns' ? first.txns : [])
          assert.ok(apply(store, txn, (revision += 1)), 'the first write applies');
        const next = durableLayout(PREFIX, after);
        const stored = new Map([...store].map(([k, v]) => [k, v.value]));
        const plan = planWrites(PREFIX, store, changesBetween(stored, next), FENCE, bounds);
        assert.equal(plan.kind, 'txns');
        if (plan.kind !== 'txns') return;
        const changed = [...next].filter(([k, v]) => store.get(k)?.value !== v).length;
        const gone = [...store.keys()].filter((k) => !next.has(k)).length;
        assert.equal(
          plan.txns.reduce((n, t) => n + t.ops.length, 0),
          changed + gone,
        );
        for (const txn of plan.txns) {
          assert.ok(txn.ops.length > 0, 'no empty transaction');
          assert.ok(txn.fence.length + txn.compares.length <= bounds.maxOps, 'compares within the op limit');
          assert.ok(txn.ops.length <= bounds.maxOps, 'ops within the op limit');
          assert.equal(txn.compares.length, txn.ops.length, 'every op compares its key');
          assert.ok(
            txn.ops.reduce((n, op) => n + opBytes(op), 0) <= bounds.maxBytes,
            'bytes within the limit',
          );
          assert.deepEqual(
            txn.fence.map((c) => c.key),
            [FENCE.key, FENCE.key],
          );
        }
        // Applied one by one, no prefix leaves a shuffle without its application; the end is the next state.
        for (const txn of plan.txns) {
          assert.ok(
            apply(store, txn, (revision += 1)),
            'compare-and-swap holds for the leader that read the keys',
          );
          const keys = [...store.entries()].map(([key, k]) => ({ key, value: k.value }));
          assert.doesNotThrow(() => assembleDurable(PREFIX, keys, EMPTY));
        }
        assert.deepEqual(new Map([...store].map(([k, v]) => [k, v.value])), next);
      }),
    );
  });

  it('a write planned on a stale read is refused by the store', () => {
    fc.assert(
      fc.property(durableState, (durable) => {
        const layout = durableLayout(PREFIX, durable);
        const store = new Map<string, KnownKey>();
        const plan = planWrites(PREFIX, new Map(), layout, FENCE);
        if (plan.kind !== 'txns') return;
        plan.txns.forEach((txn, i) => apply(store, txn, 20 + i));
        const stale = new Map(store);
        const meta = `${PREFIX}meta`;
        store.set(meta, { value: store.get(meta)!.value + ' ', modRevision: 99 }); // another writer
        const next = new Map(layout).set(meta, '{"changed":true}');
        const again = planWrites(PREFIX, stale, next, FENCE);
        assert.equal(again.kind, 'txns');
        if (again.kind === 'txns') assert.equal(apply(store, again.txns[0]!, 100), false);
      }),
    );
  });

  it('names a key no request could carry', () => {
    const big = new Map([[`${PREFIX}meta`, 'x'.repeat(DEFAULT_TXN_LIMITS.maxBytes)]]);
    const plan = planWrites(PREFIX, new Map(), big, FENCE);
    assert.equal(plan.kind, 'oversized');
  });

  it('counts the bytes of the default limits below etcd’s 1.5 MiB and 128 operations', () => {
    assert.ok(DEFAULT_TXN_LIMITS.maxBytes < 1.5 * 1024 * 1024, 'below 1.5 MiB');
    assert.equal(DEFAULT_TXN_LIMITS.maxOps, 128);
  });
});
