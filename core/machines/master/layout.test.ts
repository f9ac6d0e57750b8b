import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { workerKey, type DiskInfo, type WorkerState } from '../../domain/index.ts';
import type { Effect } from '../effects.ts';
import { Harness, ofKind, workerId } from '../worker/test-kit.ts';
import { BOOKING_WORKERS_PER_PART, newBooking, restoreBookings } from './bookings.ts';
import {
  appKey,
  assembleDurable,
  bookingKey,
  durableLayout,
  durableWrites,
  MASTER_STATE_PREFIX,
  nothingTouched,
  shuffleEntryKey,
} from './layout.ts';
import { masterMachine, MASTER_TIMERS } from './machine.ts';
import {
  encodeDurableState,
  initialMasterState,
  MASTER_STATE_KEY,
  type MasterDurableState,
  type MasterState,
} from './state.ts';
import { storedBy, testMasterConfig } from './testing.ts';

const GiB = 1024 ** 3;
const LM = 'lm';
const WORKERS = [0, 1, 2, 3, 4].map((i) => workerId(`h${i}`, 9000 + i * 10));
const APPS = ['a', 'b/c', 'd'];

function disks(status: DiskInfo['status'], usable: number): DiskInfo[] {
  return [
    {
      mountPoint: '/d1',
      type: 'HDD',
      usableBytes: usable * GiB,
      totalBytes: 100 * GiB,
      status,
      avgFlushTimeNs: 0,
      avgFetchTimeNs: 0,
      activeSlots: 0,
    },
  ];
}

type Command =
  | { kind: 'register'; worker: number }
  | { kind: 'heartbeat'; worker: number; unhealthy: boolean; usable: number; state: WorkerState }
  | { kind: 'exclude'; worker: number; add: boolean }
  | { kind: 'event'; worker: number; type: 'DECOMMISSION' | 'GRACEFUL' | 'NONE' | 'RECOMMISSION' }
  | {
      kind: 'report';
      worker: number;
      type: 'ReportWorkerUnavailable' | 'ReportWorkerDecommission' | 'ReportWorkerLost';
    }
  | { kind: 'registerApp'; app: number; hostname: string }
  | { kind: 'appHeartbeat'; app: number; bytes: number; shuffles: number[] }
  | { kind: 'request'; app: number; shuffle: number }
  | { kind: 'unregisterShuffle'; app: number; shuffle: number }
  | { kind: 'unregisterApp'; app: number }
  | { kind: 'timer'; name: string; advance: number }
  | { kind: 'restart' };

const worker = fc.integer({ min: 0, max: WORKERS.length - 1 });
const app = fc.integer({ min: 0, max: APPS.length - 1 });
const shuffle = fc.integer({ min: 0, max: 3 });
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('register' as const), worker }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('heartbeat' as const),
      worker,
      unhealthy: fc.constantFrom(false, false, true),
      usable: fc.integer({ min: 1, max: 90 }),
      state: fc.constantFrom<WorkerState>('Normal', 'Normal', 'Idle', 'InGraceful', 'InDecommission', 'Exit'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('exclude' as const), worker, add: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('event' as const),
      worker,
      type: fc.constantFrom(
        'DECOMMISSION' as const,
        'GRACEFUL' as const,
        'NONE' as const,
        'RECOMMISSION' as const,
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('report' as const),
      worker,
      type: fc.constantFrom(
        'ReportWorkerUnavailable' as const,
        'ReportWorkerDecommission' as const,
        'ReportWorkerLost' as const,
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('registerApp' as const),
      app,
      hostname: fc.constantFrom('h1', 'h2'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('appHeartbeat' as const),
      app,
      bytes: fc.nat(1000),
      shuffles: fc.uniqueArray(shuffle, { maxLength: 2 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('request' as const), app, shuffle }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unregisterShuffle' as const), app, shuffle }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unregisterApp' as const), app }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('timer' as const),
      name: fc.constantFrom(...Object.values(MASTER_TIMERS)),
      advance: fc.integer({ min: 0, max: 2_000_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

let requestId = 0;

function apply(harness: Harness<MasterState>, c: Command): Effect[] {
  const options = { requestId: (requestId += 1) };
  switch (c.kind) {
    case 'register': {
      const id = WORKERS[c.worker]!;
      return harness.receive(
        workerKey(id),
        { type: 'RegisterWorker', worker: id, disks: disks('HEALTHY', 50), networkLocation: '/r1' },
        options,
      );
    }
    case 'heartbeat': {
      const id = WORKERS[c.worker]!;
      return harness.receive(
        workerKey(id),
        {
          type: 'WorkerHeartbeat',
          worker: id,
          disks: disks(c.unhealthy ? 'IO_HANG' : 'HEALTHY', c.usable),
          activeShuffleKeys: [],
          highWorkload: false,
          state: c.state,
        },
        options,
      );
    }
    case 'exclude': {
      const key = workerKey(WORKERS[c.worker]!);
      return harness.step({
        kind: 'admin',
        command: { type: 'excludeWorkers', add: c.add ? [key] : [], remove: c.add ? [] : [key] },
      });
    }
    case 'event':
      return harness.step({
        kind: 'admin',
        command: { type: 'workerEvent', eventType: c.type, workers: [workerKey(WORKERS[c.worker]!)] },
      });
    case 'report': {
      const id = WORKERS[c.worker]!;
      return harness.receive(workerKey(id), { type: c.type, worker: id });
    }
    case 'registerApp':
      return harness.receive(
        LM,
        { type: 'RegisterApplication', appId: APPS[c.app]!, user: 'u', hostname: c.hostname },
        options,
      );
    case 'appHeartbeat':
      return harness.receive(
        LM,
        {
          type: 'ApplicationHeartbeat',
          appId: APPS[c.app]!,
          bytesWritten: c.bytes,
          fileCount: 1,
          shuffleIds: c.shuffles,
        },
        options,
      );
    case 'request':
      return harness.receive(
        LM,
        {
          type: 'RequestSlots',
          appId: APPS[c.app]!,
          shuffleId: c.shuffle,
          partitionIds: [0, 1, 2],
          replicate: false,
          rackAware: false,
          availableTypes: 2,
          excludedWorkers: [],
          maxWorkers: 10_000,
        },
        options,
      );
    case 'unregisterShuffle':
      return harness.receive(
        LM,
        { type: 'UnregisterShuffle', appId: APPS[c.app]!, shuffleId: c.shuffle },
        options,
      );
    case 'unregisterApp':
      return harness.receive(LM, { type: 'UnregisterApplication', appId: APPS[c.app]! }, options);
    case 'timer':
      return harness.timer(c.name, harness.now + c.advance);
    case 'restart':
      throw new Error('a restart replaces the harness');
  }
}

/**
 * A layout's values without what steps change without writing it (a worker's heartbeat: its time, disks, state and
 * workload; the reason it stays auto-excluded; an application's heartbeat time; the bytes written since the last
 * sample): what must always equal the state's.
 */
function durablePart(layout: ReadonlyMap<string, string>): Map<string, unknown> {
  const strip = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    const {
      lastHeartbeat: _time,
      disks: _disks,
      state: _state,
      stateSince: _since,
      highWorkload: _load,
      writtenSinceSample: _sample,
      ...rest
    } = value as Record<string, unknown>;
    return rest;
  };
  return new Map(
    [...layout].map(([key, value]) => {
      const parsed = JSON.parse(value) as Record<string, unknown>;
      const entry = key.includes('/autoExcluded/') ? { ...parsed, reason: '' } : parsed;
      return [key, strip(entry)];
    }),
  );
}

describe('the master persists what a step touched', () => {
  it('each step’s writes, applied to the store, keep it the layout of the state; a restart reads it back', () => {
    let writes = 0;
    fc.assert(
      fc.property(fc.array(command, { minLength: 5, maxLength: 60 }), (commands) => {
        const config = testMasterConfig({
          slots: {
            policy: { name: 'ROUNDROBIN' },
            budgetMode: 'strict',
            maxWorkers: 2,
            extraSlots: 1,
            minWorkers: 100,
          },
        });
        let harness = new Harness(masterMachine, initialMasterState(config));
        const store = storedBy(harness.start());
        for (const c of commands) {
          if (c.kind === 'restart') {
            const now = harness.now;
            harness = new Harness(masterMachine, initialMasterState(config));
            harness.now = now;
            storedBy(harness.start(new Map(store)), store);
          } else {
            const before = new Map(store);
            const effects = apply(harness, c);
            const persisted = ofKind(effects, 'persist');
            storedBy(effects, store);
            writes += persisted.length;
            const layout = durableLayout(MASTER_STATE_PREFIX, harness.state.durable);
            for (const { key, value } of persisted) {
              assert.equal(value, layout.get(key) ?? null, `${c.kind}: ${key} written as the state has it`);
            }
            for (const [key, value] of before) {
              if (!persisted.some((p) => p.key === key))
                assert.equal(store.get(key), value, `${key} untouched`);
            }
          }
          const layout = durableLayout(MASTER_STATE_PREFIX, harness.state.durable);
          assert.deepEqual(
            [...store.keys()].sort(),
            [...layout.keys()].sort(),
            `after ${c.kind}: the same keys`,
          );
          assert.deepEqual(
            durablePart(store),
            durablePart(layout),
            `after ${c.kind}: the same durable facts`,
          );
        }
      }),
      { numRuns: 200 },
    );
    assert.ok(writes > 500, `the commands should write often enough to mean something (got ${writes})`);
  });

  it('writes nothing but the keys of what it was told it touched', () => {
    const state = initialMasterState(testMasterConfig()).durable;
    assert.deepEqual(durableWrites(MASTER_STATE_PREFIX, state, state, nothingTouched()), []);
  });

  it('a RegisterShuffle writes its shuffle, its application and the workers it booked, whatever the cluster size', () => {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    harness.start();
    for (let i = 0; i < 200; i += 1) {
      const id = workerId(`w${i}`, 9000);
      harness.receive(workerKey(id), {
        type: 'RegisterWorker',
        worker: id,
        disks: disks('HEALTHY', 50),
        networkLocation: '/r1',
      });
    }
    const effects = apply(harness, { kind: 'request', app: 0, shuffle: 7 });
    const keys = ofKind(effects, 'persist').map((p) => p.key);
    assert.deepEqual(
      keys,
      [
        appKey(MASTER_STATE_PREFIX, 'a'),
        shuffleEntryKey(MASTER_STATE_PREFIX, 'a', 7),
        bookingKey(MASTER_STATE_PREFIX, 0, 0),
      ],
      'the application, the shuffle and one key for the booking: no worker entry',
    );
  });
});

describe('slot bookings', () => {
  const request = (harness: Harness<MasterState>, shuffleId: number, partitions: number): Effect[] =>
    harness.receive(
      LM,
      {
        type: 'RequestSlots',
        appId: 'a',
        shuffleId,
        partitionIds: Array.from({ length: partitions }, (_, i) => i),
        replicate: true,
        rackAware: false,
        availableTypes: 2,
        excludedWorkers: [],
        maxWorkers: 100_000,
      },
      { requestId: (requestId += 1) },
    );
  const heartbeat = (harness: Harness<MasterState>, i: number, usable = 50): Effect[] => {
    const id = WORKERS[i]!;
    return harness.receive(
      workerKey(id),
      {
        type: 'WorkerHeartbeat',
        worker: id,
        disks: disks('HEALTHY', usable),
        activeShuffleKeys: [],
        highWorkload: false,
        state: 'Normal',
      },
      { requestId: (requestId += 1) },
    );
  };
  const slotsOf = (durable: MasterDurableState): number[] =>
    WORKERS.map((id) => durable.workers.workers.get(workerKey(id))?.disks[0]?.activeSlots ?? -1);

  function cluster(): { harness: Harness<MasterState>; store: Map<string, string> } {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const store = storedBy(harness.start());
    for (let i = 0; i < WORKERS.length; i += 1) {
      const id = WORKERS[i]!;
      storedBy(
        harness.receive(workerKey(id), {
          type: 'RegisterWorker',
          worker: id,
          disks: disks('HEALTHY', 50),
          networkLocation: '/r1',
        }),
        store,
      );
    }
    storedBy(
      harness.receive(LM, { type: 'RegisterApplication', appId: 'a', user: 'u', hostname: 'h1' }),
      store,
    );
    return { harness, store };
  }

  function restarted(store: Map<string, string>, now: number): Harness<MasterState> {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    harness.now = now;
    storedBy(harness.start(new Map(store)), store);
    return harness;
  }

  it('a restarted master holds the booked slots until each worker heartbeats, across restarts', () => {
    const { harness, store } = cluster();
    // A heartbeat with less space than at registration: the booking's numbers, not the entry's, come back.
    storedBy(heartbeat(harness, 0, 20), store);
    harness.now = 1_000;
    storedBy(request(harness, 1, 20), store);
    storedBy(request(harness, 2, 10), store);
    const booked = slotsOf(harness.state.durable);
    assert.ok(
      booked.every((slots) => slots > 0),
      `every worker booked (${booked.join(', ')})`,
    );
    const usable0 = harness.state.durable.workers.workers.get(workerKey(WORKERS[0]!))!.disks[0]!.usableBytes;

    let again = restarted(store, 5_000);
    assert.deepEqual(slotsOf(again.state.durable), booked, 'the bookings folded into the restored workers');
    assert.equal(
      again.state.durable.workers.workers.get(workerKey(WORKERS[0]!))!.disks[0]!.usableBytes,
      usable0,
    );
    // Heartbeats of some workers after the restart: their disks are fresh, the bookings stay for the others.
    storedBy(heartbeat(again, 0), store);
    again.now = 6_000;
    storedBy(heartbeat(again, 1), store);
    assert.equal(slotsOf(again.state.durable)[1], 0, 'a heartbeat replaces the booked disks');
    assert.ok(
      [...store.keys()].some((key) => key.includes('/bookings/')),
      'the bookings are kept',
    );

    again = restarted(store, 10_000);
    assert.deepEqual(slotsOf(again.state.durable).slice(2), booked.slice(2), 'kept across a second restart');
    for (let i = 0; i < WORKERS.length; i += 1) {
      again.now += 1;
      storedBy(heartbeat(again, i), store);
    }
    assert.deepEqual(
      [...store.keys()].filter((key) => key.includes('/bookings/')),
      [],
      'deleted once every worker heartbeated',
    );
    assert.equal(again.state.durable.bookings.size, 0);
  });

  it('a worker lost since the booking does not hold it', () => {
    const { harness, store } = cluster();
    harness.now = 1_000;
    storedBy(request(harness, 1, 10), store);
    for (let i = 1; i < WORKERS.length; i += 1) storedBy(heartbeat(harness, i), store);
    assert.equal(harness.state.durable.bookings.size, 1, 'worker 0 has not heartbeated');
    storedBy(harness.timer(MASTER_TIMERS.lostWorkers, 1_000 + 120_001), store);
    assert.equal(harness.state.durable.workers.lost.size, WORKERS.length, 'every worker silent is lost');
    assert.equal(harness.state.durable.bookings.size, 0);
    assert.deepEqual(
      [...store.keys()].filter((key) => key.includes('/bookings/')),
      [],
    );
  });

  it("a booking's part is the text JSON.stringify makes of its workers and disks", () => {
    const registry = initialMasterState(testMasterConfig()).durable.workers;
    const disk = fc.record({
      mountPoint: fc.string(),
      activeSlots: fc.nat(),
      usableBytes: fc.oneof(fc.nat(), fc.double({ min: 0, noNaN: true })),
      filesystemUsableBytes: fc.option(fc.nat(), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string(), fc.array(disk, { minLength: 1, maxLength: 3 })), { maxLength: 5 }),
        fc.nat(),
        (booked, at) => {
          const entries = booked.map(([host, bookedDisks], i) => {
            const id = workerId(`${host}${i}`, 9000);
            const worker = {
              id,
              disks: bookedDisks.map(({ filesystemUsableBytes, ...numbers }) => ({
                ...disks('HEALTHY', 50)[0]!,
                ...numbers,
                ...(filesystemUsableBytes === undefined ? {} : { filesystemUsableBytes }),
              })),
              networkLocation: '/r1',
              state: 'Normal' as const,
              lastHeartbeat: 0,
              highWorkload: false,
              stateSince: 0,
            };
            return [workerKey(id), worker] as const;
          });
          const after = { ...registry, workers: new Map(entries) };
          const booking = newBooking(registry, after, after.workers.keys(), at);
          if (entries.length === 0) return booking === null;
          const expected = JSON.stringify({
            at,
            workers: entries.map(([key, worker]) => [
              key,
              worker.disks.map((d) =>
                d.filesystemUsableBytes === undefined
                  ? [d.mountPoint, d.activeSlots, d.usableBytes]
                  : [d.mountPoint, d.activeSlots, d.usableBytes, d.filesystemUsableBytes],
              ),
            ]),
          });
          return booking?.parts.size === 1 && booking.parts.get(0) === expected;
        },
      ),
    );
  });

  it('a booking of more workers than a part holds is split into parts, each whole on its own', () => {
    const registry = initialMasterState(testMasterConfig()).durable.workers;
    const many = Array.from({ length: BOOKING_WORKERS_PER_PART + 10 }, (_, i) => {
      const id = workerId(`m${i}`, 9000);
      return [
        workerKey(id),
        {
          id,
          disks: disks('HEALTHY', 50),
          networkLocation: '/r1',
          state: 'Normal',
          lastHeartbeat: 0,
          highWorkload: false,
          stateSince: 0,
        },
      ] as const;
    });
    const before = { ...registry, workers: new Map(many) };
    const after = {
      ...registry,
      workers: new Map(many.map(([key, w]) => [key, { ...w, disks: [{ ...w.disks[0]!, activeSlots: 2 }] }])),
    };
    const booking = newBooking(before, after, after.workers.keys(), 7)!;
    assert.equal(booking.parts.size, 2);
    const stored = new Map([[3, new Map([[1, { key: 'k', value: booking.parts.get(1)! }]])]]);
    const restored = restoreBookings(stored, before.workers);
    assert.equal(restored.bookings.get(3)!.workers.length, 10, 'a part alone restores its workers');
    const folded = [...restored.workers.values()].filter((w) => w.disks[0]!.activeSlots === 2);
    assert.equal(folded.length, 10);
  });
});

describe('the master on a store of an earlier release', () => {
  function legacyStore(): { durable: MasterDurableState; store: Map<string, string> } {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    harness.start();
    for (const c of [
      { kind: 'register', worker: 0 },
      { kind: 'register', worker: 1 },
      { kind: 'exclude', worker: 1, add: true },
      { kind: 'registerApp', app: 1, hostname: 'h1' },
      { kind: 'request', app: 1, shuffle: 2 },
      { kind: 'request', app: 1, shuffle: 3 },
    ] as const)
      apply(harness, c);
    const durable = harness.state.durable;
    return { durable, store: new Map([[MASTER_STATE_KEY, encodeDurableState(durable)]]) };
  }

  it('reads the one value, rewrites it as the layout in one write, and deletes it', () => {
    const { durable, store } = legacyStore();
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const effects = harness.start(store);
    assert.equal(ofKind(effects, 'exit').length, 0);
    assert.equal(effects[0]?.kind, 'persist', 'the rewrite comes before anything else');
    assert.ok(
      ofKind(effects, 'log').some((line) => line.event === 'master.state.migrated'),
      'says it migrated',
    );
    storedBy(effects, store);
    assert.equal(store.has(MASTER_STATE_KEY), false, 'the one value is gone');
    const entries = [...store].map(([key, value]) => ({ key, value }));
    const restored = assembleDurable(
      MASTER_STATE_PREFIX,
      entries,
      initialMasterState(testMasterConfig()).durable,
    );
    assert.deepEqual(
      durablePart(durableLayout('', restored)),
      // The one value held the booked disks in the workers' entries, never bookings of their own.
      durablePart(durableLayout('', { ...durable, bookings: new Map() })),
      'the state read back is the one value',
    );
    assert.ok(store.has(shuffleEntryKey(MASTER_STATE_PREFIX, 'b/c', 3)), 'an id with a slash is one segment');

    // The next start reads the layout, and writes nothing.
    const again = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const restart = again.start(new Map(store));
    assert.equal(ofKind(restart, 'persist').length, 0);
    assert.equal(again.state.durable.applications.apps.get('b/c')?.shuffles.length, 2);
    assert.equal(again.state.durable.workers.manuallyExcluded.size, 1);
  });

  it('takes the one value over layout keys beside it (written by an earlier release after a downgrade)', () => {
    const { store } = legacyStore();
    store.set(
      `${MASTER_STATE_PREFIX}meta`,
      '{"version":1,"estimatedPartitionSize":1,"writtenSinceSample":{"bytes":0,"files":0}}',
    );
    store.set(`${MASTER_STATE_PREFIX}apps/gone`, '{"appId":"gone","lastHeartbeat":0}');
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    storedBy(harness.start(store), store);
    assert.equal(store.has(`${MASTER_STATE_PREFIX}apps/gone`), false, 'a key of the older layout is deleted');
    assert.equal(harness.state.durable.applications.apps.has('gone'), false);
    assert.equal(harness.state.durable.applications.apps.has('b/c'), true);
  });

  it('reads a store of layout version 1 (booked disks in the workers’ entries) and says version 2 first', () => {
    const { durable } = legacyStore();
    const store = durableLayout(MASTER_STATE_PREFIX, { ...durable, bookings: new Map() });
    const meta = JSON.parse(store.get(`${MASTER_STATE_PREFIX}meta`)!) as Record<string, unknown>;
    store.set(`${MASTER_STATE_PREFIX}meta`, JSON.stringify({ ...meta, version: 1 }));
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const effects = harness.start(new Map(store));
    assert.equal(ofKind(effects, 'exit').length, 0);
    assert.deepEqual(
      ofKind(effects, 'persist').map((p) => [p.key, (JSON.parse(p.value!) as { version: number }).version]),
      [[`${MASTER_STATE_PREFIX}meta`, 2]],
      'only the layout version is rewritten',
    );
    assert.deepEqual(
      durablePart(durableLayout('', harness.state.durable)),
      durablePart(durableLayout('', { ...durable, bookings: new Map() })),
    );
    const booked = [...durable.workers.workers.values()].map((w) => w.disks[0]!.activeSlots);
    assert.deepEqual(
      [...harness.state.durable.workers.workers.values()].map((w) => w.disks[0]!.activeSlots),
      booked,
      'the booked slots of the entries are kept',
    );
    storedBy(effects, store);
    const again = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    assert.equal(ofKind(again.start(new Map(store)), 'persist').length, 0, 'the next start writes nothing');
  });

  it('refuses a store of a layout version it does not read, naming it', () => {
    const store = durableLayout(MASTER_STATE_PREFIX, initialMasterState(testMasterConfig()).durable);
    store.set(`${MASTER_STATE_PREFIX}meta`, JSON.stringify({ version: 3, estimatedPartitionSize: 1 }));
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const exit = ofKind(harness.start(store), 'exit');
    assert.match(exit[0]!.reason, /layout version 3, this release reads 1 and 2/);
  });

  it('a new store gets the layout version first, so that any later key is read under it', () => {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const effects = harness.start();
    assert.deepEqual(
      ofKind(effects, 'persist').map((p) => p.key),
      [`${MASTER_STATE_PREFIX}meta`],
    );
  });
});
