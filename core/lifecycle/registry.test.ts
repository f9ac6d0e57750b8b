import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WORKER_EVENT_TYPES, WORKER_STATES, workerKey } from '../domain/index.ts';
import type { DiskInfo, DiskStatus, WorkerEventType, WorkerId, WorkerState } from '../domain/index.ts';
import { ALLOW_ALL_HOSTS, compileHostPolicy } from './host-policy.ts';
import {
  bookOfferedSlots,
  detectLostWorkers,
  emptyRegistry,
  excludeWorkers,
  expireUnavailableInfo,
  markWorkerLost,
  recordHeartbeat,
  recordWorkerStopped,
  registerWorker,
  removeUnavailableInfo,
  reportWorkersDecommissioning,
  reportWorkersUnavailable,
  sendWorkerEvent,
} from './registry.ts';
import type { HeartbeatPolicy, WorkerRegistry } from './registry.ts';
import { restoreRegistry, snapshotRegistry } from './registry-snapshot.ts';
import { transition } from './worker-states.ts';
import type { WorkerRegistrySnapshot } from './registry-snapshot.ts';
import {
  availableWorkers,
  decommissioningWorkers,
  excludedWorkers,
  goneWorkers,
  isAvailable,
  lostWorkers,
  manuallyExcludedWorkers,
  shutdownWorkers,
  unavailabilityReasons,
  unavailableWorkerKeys,
  workerCounts,
  workerEvents,
} from './registry-views.ts';

const ids: readonly WorkerId[] = [1, 2, 3, 4].map((n) => ({
  host: `worker-${n}`,
  rpcPort: 9000 + n,
  pushPort: 9100 + n,
  fetchPort: 9200 + n,
  replicatePort: 9300 + n,
}));
const keys = ids.map(workerKey);
const id0 = ids[0]!;
const id1 = ids[1]!;
const key0 = keys[0]!;

function disk(mountPoint: string, status: DiskStatus = 'HEALTHY'): DiskInfo {
  return {
    mountPoint,
    type: 'HDD',
    usableBytes: 1 << 30,
    totalBytes: 1 << 31,
    status,
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
  };
}

const HEALTHY = [disk('/d1'), disk('/d2')];
const registeredShuffles = new Set(['app-1-0']);
const POLICY: HeartbeatPolicy = {
  unhealthyDiskRatioThreshold: 1,
  dfsConfigured: false,
  isShuffleExpired: (key) => !registeredShuffles.has(key),
};

function register(registry: WorkerRegistry, id: WorkerId, now: number): WorkerRegistry {
  return registerWorker(registry, { id, disks: HEALTHY, networkLocation: '' }, now, ALLOW_ALL_HOSTS).registry;
}

function heartbeat(
  registry: WorkerRegistry,
  id: WorkerId,
  now: number,
  fields: { state?: WorkerState; highWorkload?: boolean; disks?: readonly DiskInfo[]; keys?: string[] } = {},
) {
  return recordHeartbeat(
    registry,
    {
      id,
      disks: fields.disks ?? HEALTHY,
      state: fields.state ?? 'Normal',
      highWorkload: fields.highWorkload ?? false,
      activeShuffleKeys: fields.keys ?? [],
    },
    now,
    POLICY,
  );
}

// -----------------------------------------------------------------------------------------------------------
// Random operation sequences over a pool of four workers (plus one nobody registers, to exercise "unknown").

type Op =
  | { op: 'register'; worker: number }
  | { op: 'heartbeat'; worker: number; state: WorkerState; highWorkload: boolean; unhealthy: boolean }
  | { op: 'detectLost'; timeout: number }
  | { op: 'markLost'; worker: number }
  | { op: 'stop'; worker: number; immediately: boolean }
  | { op: 'exclude'; add: number[]; remove: number[] }
  | { op: 'event'; type: WorkerEventType; workers: number[] }
  | { op: 'unavailable'; workers: number[] }
  | { op: 'decommission'; workers: number[] }
  | { op: 'expire'; timeout: number }
  | { op: 'removeUnavailable'; workers: number[] }
  | { op: 'book'; worker: number; slots: number };

const poolKeys = [...keys, 'nobody:1:2:3:4'];
// Mostly the registered pool, sometimes the stranger.
const workerArb = fc.oneof({ arbitrary: fc.nat(3), weight: 6 }, { arbitrary: fc.constant(4), weight: 1 });
const workersArb = fc.array(workerArb, { maxLength: 3 });
/** True one time in five. */
const sometimes = fc.nat(4).map((n) => n === 0);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('register' as const), worker: fc.nat(3) }), weight: 4 },
  {
    arbitrary: fc.record({
      op: fc.constant('heartbeat' as const),
      worker: fc.nat(3),
      state: fc.oneof(
        { arbitrary: fc.constant<WorkerState>('Normal'), weight: 3 },
        { arbitrary: fc.constantFrom(...WORKER_STATES), weight: 1 },
      ),
      highWorkload: sometimes,
      unhealthy: sometimes,
    }),
    weight: 5,
  },
  fc.record({ op: fc.constant('detectLost' as const), timeout: fc.integer({ min: 0, max: 100 }) }),
  fc.record({ op: fc.constant('markLost' as const), worker: workerArb }),
  fc.record({ op: fc.constant('stop' as const), worker: workerArb, immediately: fc.boolean() }),
  fc.record({ op: fc.constant('exclude' as const), add: workersArb, remove: workersArb }),
  {
    arbitrary: fc.record({
      op: fc.constant('event' as const),
      type: fc.constantFrom(...WORKER_EVENT_TYPES),
      workers: workersArb,
    }),
    weight: 2,
  },
  fc.record({ op: fc.constant('unavailable' as const), workers: workersArb }),
  fc.record({ op: fc.constant('decommission' as const), workers: workersArb }),
  fc.record({ op: fc.constant('expire' as const), timeout: fc.integer({ min: 0, max: 100 }) }),
  fc.record({ op: fc.constant('removeUnavailable' as const), workers: workersArb }),
  fc.record({ op: fc.constant('book' as const), worker: workerArb, slots: fc.nat(5) }),
);
const stepsArb = fc.array(fc.tuple(opArb, fc.integer({ min: 0, max: 40 })), { maxLength: 50, size: 'max' });

function apply(registry: WorkerRegistry, op: Op, now: number): WorkerRegistry {
  const pick = (workers: number[]) => workers.map((n) => poolKeys[n]!);
  switch (op.op) {
    case 'register':
      return register(registry, ids[op.worker]!, now);
    case 'heartbeat': {
      const disks = op.unhealthy ? [disk('/d1', 'IO_HANG'), disk('/d2', 'CRITICAL_ERROR')] : HEALTHY;
      return heartbeat(registry, ids[op.worker]!, now, { ...op, disks }).registry;
    }
    case 'detectLost':
      return detectLostWorkers(registry, now, op.timeout).registry;
    case 'markLost':
      return markWorkerLost(registry, poolKeys[op.worker]!, now).registry;
    case 'stop':
      return recordWorkerStopped(registry, poolKeys[op.worker]!, now, op).registry;
    case 'exclude':
      return excludeWorkers(registry, { add: pick(op.add), remove: pick(op.remove) }, now).registry;
    case 'event':
      return sendWorkerEvent(registry, op.type, pick(op.workers), now).registry;
    case 'unavailable':
      return reportWorkersUnavailable(registry, pick(op.workers), now).registry;
    case 'decommission':
      return reportWorkersDecommissioning(registry, pick(op.workers), now).registry;
    case 'expire':
      return expireUnavailableInfo(registry, now, op.timeout).registry;
    case 'removeUnavailable':
      return removeUnavailableInfo(registry, pick(op.workers)).registry;
    case 'book':
      return bookOfferedSlots(
        registry,
        new Map([[poolKeys[op.worker]!, new Map([['/d1', op.slots]])]]),
        1 << 20,
      ).registry;
  }
}

/** Runs the steps from an empty registry, calling `check` after each; returns the final registry and time. */
function run(
  steps: readonly (readonly [Op, number])[],
  check: (registry: WorkerRegistry) => void = () => {},
  start: { registry: WorkerRegistry; now: number } = { registry: emptyRegistry(), now: 0 },
): { registry: WorkerRegistry; now: number } {
  let { registry, now } = start;
  for (const [op, elapsed] of steps) {
    now += elapsed;
    registry = apply(registry, op, now);
    check(registry);
  }
  return { registry, now };
}

function checkInvariants(registry: WorkerRegistry): void {
  const available = new Set(availableWorkers(registry).map((worker) => workerKey(worker.id)));
  const never = [
    ...excludedWorkers(registry),
    ...shutdownWorkers(registry),
    ...decommissioningWorkers(registry),
    ...workerEvents(registry).map((event) => event.worker),
    ...goneWorkers(registry),
  ].map(workerKey);
  for (const key of never) assert.ok(!available.has(key), `${key} is unavailable by its sets`);
  for (const key of available) {
    assert.equal(registry.workers.get(key)?.state, 'Normal');
    assert.ok(!unavailableWorkerKeys(registry).has(key), '!unavailableWorkerKeys(registry).has(key)');
  }
  for (const key of registry.lost.keys()) {
    assert.ok(!registry.workers.has(key), 'registered and lost at once');
  }
  for (const key of registry.stopped.keys()) {
    assert.ok(
      !registry.workers.has(key) && !registry.lost.has(key),
      'stopped and registered or lost at once',
    );
    assert.ok(!registry.decommissioning.has(key), 'a stopped worker is no longer decommissioning');
  }
  for (const [key, event] of registry.events) {
    const state = registry.workers.get(key)?.state;
    if (state !== undefined)
      assert.notEqual(transition(state, event.type).outcome, 'refuse', 'no pending refusal');
  }
  for (const set of [registry.shutdown, registry.decommissioning, registry.events, registry.autoExcluded]) {
    for (const key of set.keys()) assert.ok(registry.workers.has(key) || registry.lost.has(key), key);
  }
  assert.deepEqual(workerCounts(registry), {
    WorkerCount: registry.workers.size,
    LostWorkerCount: lostWorkers(registry).length,
    ExcludedWorkerCount: new Set([...registry.autoExcluded.keys(), ...registry.manuallyExcluded.keys()]).size,
    AvailableWorkerCount: available.size,
    ShutdownWorkerCount: shutdownWorkers(registry).length,
    DecommissionWorkerCount: decommissioningWorkers(registry).length,
  });
}

describe('worker registry: properties', () => {
  it('calls a worker available exactly when it has no reason to be unavailable', () => {
    fc.assert(
      fc.property(stepsArb, (steps) => {
        run(steps, (registry) => {
          for (const key of [...registry.workers.keys(), ...registry.lost.keys(), ...registry.stopped.keys()])
            assert.equal(isAvailable(registry, key), unavailabilityReasons(registry, key).length === 0, key);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('never counts excluded, lost, shutting-down, decommissioning or event-pending workers available', () => {
    fc.assert(
      fc.property(stepsArb, (steps) => {
        run(steps, checkInvariants);
      }),
      { numRuns: 300 },
    );
  });

  it('declares a worker lost exactly when its last heartbeat is more than the timeout ago', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 0, max: 1e6 }),
        (registeredAt, sinceHeartbeat, timeout) => {
          const registry = heartbeat(
            register(emptyRegistry(), id0, registeredAt),
            id0,
            registeredAt + sinceHeartbeat,
          ).registry;
          const last = registeredAt + sinceHeartbeat;
          assert.deepEqual(detectLostWorkers(registry, last + timeout, timeout).lost, []);
          const after = detectLostWorkers(registry, last + timeout + 1, timeout);
          assert.deepEqual(after.lost, [key0]);
          assert.equal(after.registry.lost.get(key0)?.lostAt, last + timeout + 1);
          assert.ok(!after.registry.workers.has(key0), '!after.registry.workers.has(key0)');
        },
      ),
    );
  });

  it('starts a re-registered worker clean, except for its manual exclusion and a pending Recommission', () => {
    fc.assert(
      fc.property(stepsArb, fc.nat(3), (steps, worker) => {
        const { registry, now } = run(steps);
        const key = keys[worker]!;
        const wasManual = registry.manuallyExcluded.has(key);
        const recommission = registry.events.get(key)?.type === 'Recommission';
        const after = registerWorker(
          registry,
          { id: ids[worker]!, disks: HEALTHY, networkLocation: '' },
          now,
          ALLOW_ALL_HOSTS,
        );
        assert.equal(after.outcome.accepted, true);
        const next = after.registry;
        for (const set of [next.lost, next.autoExcluded, next.shutdown, next.decommissioning]) {
          assert.ok(!set.has(key), '!set.has(key)');
        }
        assert.equal(
          next.events.get(key)?.type,
          recommission ? 'Recommission' : undefined,
          'only a pending Recommission outlives the registration',
        );
        assert.equal(next.workers.get(key)?.state, 'Normal');
        assert.equal(next.manuallyExcluded.has(key), wasManual);
        // A pending event keeps a worker out until a heartbeat completes it, a kept Recommission too.
        assert.equal(isAvailable(next, key), !wasManual && !recommission);
        checkInvariants(next);
      }),
      { numRuns: 200 },
    );
  });

  it('keeps a manual exclusion through everything but an operator remove', () => {
    const noRemoveOfWorker0 = stepsArb.map((steps) =>
      steps.map(([op, elapsed]): [Op, number] =>
        op.op === 'exclude' ? [{ ...op, remove: op.remove.filter((n) => n !== 0) }, elapsed] : [op, elapsed],
      ),
    );
    fc.assert(
      fc.property(noRemoveOfWorker0, (steps) => {
        const start = excludeWorkers(
          register(emptyRegistry(), id0, 0),
          { add: [key0], remove: [] },
          0,
        ).registry;
        const { registry, now } = run(steps, checkInvariants, { registry: start, now: 0 });
        assert.ok(registry.manuallyExcluded.has(key0), 'registry.manuallyExcluded.has(key0)');
        assert.ok(!isAvailable(registry, key0), '!isAvailable(registry, key0)');
        const removed = excludeWorkers(registry, { add: [], remove: [key0] }, now);
        assert.deepEqual(removed.removed, [key0]);
        assert.ok(
          !removed.registry.manuallyExcluded.has(key0),
          '!removed.registry.manuallyExcluded.has(key0)',
        );
      }),
      { numRuns: 200 },
    );
  });

  it('restores exactly the registry it snapshotted, through JSON', () => {
    fc.assert(
      fc.property(stepsArb, (steps) => {
        const { registry } = run(steps);
        const restored = restoreRegistry(
          JSON.parse(JSON.stringify(snapshotRegistry(registry))) as WorkerRegistrySnapshot,
        );
        assert.deepEqual(plain(restored), plain(registry));
        assert.deepEqual([...restored.workers.keys()], [...registry.workers.keys()], 'order survives');
      }),
      { numRuns: 200 },
    );
  });
});

/** The registry with every section a plain Map: a section may be a LayeredMap, equal in content but not in shape. */
function plain(registry: WorkerRegistry): Record<string, Map<unknown, unknown>> {
  return Object.fromEntries(
    Object.entries(registry).map(([name, map]) => [name, new Map(map as ReadonlyMap<unknown, unknown>)]),
  );
}

describe('worker registry: registration', () => {
  it('refuses hosts outside the allow pattern or inside the deny pattern, matching whole host names', () => {
    const hosts = compileHostPolicy({ allow: 'worker-\\d+', deny: 'worker-4' });
    const attempt = (id: WorkerId) =>
      registerWorker(emptyRegistry(), { id, disks: HEALTHY, networkLocation: '/r1' }, 0, hosts).outcome;
    assert.deepEqual(attempt(id0), { accepted: true, reregistered: false });
    const denied = attempt(ids[3]!);
    assert.equal(denied.accepted, false);
    assert.match(denied.accepted ? '' : denied.reason, /matches svc\.master\.denyWorkerHostPattern/);
    const outside = attempt({ ...id0, host: 'worker-1.other' });
    assert.match(
      outside.accepted ? '' : outside.reason,
      /does not match svc\.master\.allowWorkerHostPattern/,
    );
    assert.throws(
      () => compileHostPolicy({ allow: '(' }),
      /svc\.master\.allowWorkerHostPattern = '\(' is not a valid/,
    );
  });

  it('reports a registration after loss as a re-registration and puts the worker on the default rack', () => {
    const lost = markWorkerLost(register(emptyRegistry(), id0, 0), key0, 5).registry;
    const again = registerWorker(lost, { id: id0, disks: HEALTHY, networkLocation: '' }, 9, ALLOW_ALL_HOSTS);
    assert.deepEqual(again.outcome, { accepted: true, reregistered: true });
    assert.equal(again.registry.workers.get(key0)?.networkLocation, '/default-rack');
  });
});

describe('worker registry: heartbeats', () => {
  it('tells an unknown worker to register and returns expired shuffle keys and the pending event', () => {
    assert.deepEqual(heartbeat(emptyRegistry(), id0, 1).reply, { registered: false });
    let registry = register(emptyRegistry(), id0, 0);
    registry = sendWorkerEvent(registry, 'Graceful', [key0], 1).registry;
    assert.deepEqual(heartbeat(registry, id0, 2, { keys: ['app-1-0', 'app-1-1'] }).reply, {
      registered: true,
      expiredShuffleKeys: ['app-1-1'],
      event: 'Graceful',
    });
  });

  it('excludes on unhealthy disks unless a distributed tier is configured, never for high workload', () => {
    const registry = register(emptyRegistry(), id0, 0);
    const sick = [disk('/d1', 'IO_HANG'), disk('/d2', 'READ_OR_WRITE_FAILURE')];
    const excluded = heartbeat(registry, id0, 1, { disks: sick });
    assert.match(
      excluded.changes.autoExclusion?.change === 'excluded' ? excluded.changes.autoExclusion.reason : '',
      /2 of 2 local disks unhealthy/,
    );
    const withDfs = recordHeartbeat(
      registry,
      { id: id0, disks: sick, state: 'Normal', highWorkload: false, activeShuffleKeys: [] },
      1,
      { ...POLICY, dfsConfigured: true },
    );
    assert.ok(!withDfs.registry.autoExcluded.has(key0), '!withDfs.registry.autoExcluded.has(key0)');
    const busy = heartbeat(registry, id0, 1, { highWorkload: true });
    assert.ok(!busy.registry.autoExcluded.has(key0), 'a congested worker keeps taking slots');
    const halfSick = heartbeat(registry, id0, 1, { disks: [disk('/d1', 'IO_HANG'), disk('/d2')] });
    assert.ok(!halfSick.registry.autoExcluded.has(key0), '1 of 2 is below the threshold 1.0');

    const recovered = heartbeat(excluded.registry, id0, 2);
    assert.deepEqual(recovered.changes.autoExclusion, {
      change: 'released',
      previousReason: (excluded.changes.autoExclusion as { reason: string }).reason,
    });
    assert.ok(isAvailable(recovered.registry, key0), 'isAvailable(recovered.registry, key0)');
  });

  it('completes DecommissionThenIdle at Idle and Recommission at Normal, back in service', () => {
    let registry = register(emptyRegistry(), id0, 0);
    registry = sendWorkerEvent(registry, 'DecommissionThenIdle', [key0], 1).registry;
    registry = heartbeat(registry, id0, 2).registry;
    registry = reportWorkersDecommissioning(registry, [key0], 3).registry;
    registry = heartbeat(registry, id0, 4, { state: 'InDecommissionThenIdle' }).registry;
    assert.equal(workerEvents(registry)[0]?.eventType, 'DecommissionThenIdle');
    const idle = heartbeat(registry, id0, 5, { state: 'Idle' });
    assert.equal(idle.changes.completedEvent, 'DecommissionThenIdle');
    registry = idle.registry;
    assert.deepEqual(unavailabilityReasons(registry, key0), ['state Idle', 'decommissioning']);

    registry = sendWorkerEvent(registry, 'Recommission', [key0], 6).registry;
    const back = heartbeat(registry, id0, 7, { state: 'Normal' });
    assert.equal(back.changes.completedEvent, 'Recommission');
    assert.equal(back.changes.backInService, true);
    assert.deepEqual(decommissioningWorkers(back.registry), [], 'reference quirk 8 fixed');
    assert.ok(isAvailable(back.registry, key0), 'isAvailable(back.registry, key0)');
  });

  it('keeps a pending Recommission across a registration, so that an idle worker cut off before it heard it comes back (swarm seed 150727)', () => {
    let registry = register(emptyRegistry(), id0, 0);
    registry = sendWorkerEvent(registry, 'DecommissionThenIdle', [key0], 1).registry;
    registry = heartbeat(registry, id0, 2, { state: 'Idle' }).registry;
    registry = sendWorkerEvent(registry, 'Recommission', [key0], 3).registry;
    // Declared lost before its next heartbeat, it registers again, still idle.
    registry = register(registry, id0, 20);
    const idle = heartbeat(registry, id0, 21, { state: 'Idle' });
    assert.equal(idle.reply.registered && idle.reply.event, 'Recommission', 'the event is still asked of it');
    const back = heartbeat(idle.registry, id0, 22, { state: 'Normal' });
    assert.equal(back.changes.completedEvent, 'Recommission');
    assert.ok(isAvailable(back.registry, key0), 'serving again');

    // Any other pending event is dropped: a registration starts clean.
    const decommission = sendWorkerEvent(
      register(emptyRegistry(), id0, 0),
      'Decommission',
      [key0],
      1,
    ).registry;
    assert.deepEqual(workerEvents(register(decommission, id0, 2)), [], 'a Decommission does not outlive it');
  });

  it('takes a Recommission for a lost worker and asks it once the worker registers again (swarm seed 419161)', () => {
    let registry = register(emptyRegistry(), id0, 0);
    registry = sendWorkerEvent(registry, 'DecommissionThenIdle', [key0], 1).registry;
    registry = heartbeat(registry, id0, 2, { state: 'InDecommissionThenIdle' }).registry;
    // The master is cut off and declares the worker lost; the operator recommissions it meanwhile.
    registry = detectLostWorkers(registry, 200, 100).registry;
    const sent = sendWorkerEvent(registry, 'Recommission', [key0, 'ghost:1:1:1:1'], 201);
    assert.deepEqual(sent.applied, [key0], 'accepted although the worker is lost');
    assert.deepEqual(sent.unknown, ['ghost:1:1:1:1'], 'a worker never registered is still unknown');
    assert.equal(sendWorkerEvent(sent.registry, 'Recommission', [key0], 202).unchanged.length, 1);
    const decommission = sendWorkerEvent(sent.registry, 'Decommission', [key0], 203);
    assert.match(decommission.refused[0]?.reason ?? '', /^lost since 200: not heartbeating/);
    assert.deepEqual(
      workerEvents(decommission.registry),
      [{ worker: id0, eventType: 'Recommission', eventTime: 201 }],
      'a refused event leaves the pending one',
    );

    // It registers again after the partition, still idle; the kept Recommission brings it back.
    registry = register(sent.registry, id0, 300);
    const idle = heartbeat(registry, id0, 301, { state: 'Idle' });
    assert.equal(idle.reply.registered && idle.reply.event, 'Recommission', 'the event is asked of it');
    const back = heartbeat(idle.registry, id0, 302, { state: 'Normal' });
    assert.equal(back.changes.completedEvent, 'Recommission');
    assert.ok(isAvailable(back.registry, key0), 'serving again');

    const cleared = sendWorkerEvent(sent.registry, 'None', [key0], 204);
    assert.deepEqual(cleared.applied, [key0], 'None clears the pending event of a lost worker');
    assert.deepEqual(workerEvents(cleared.registry), []);
  });

  it('refuses an event for a stopped worker with the reason instead of calling it unknown', () => {
    const stopped = recordWorkerStopped(register(emptyRegistry(), id0, 0), key0, 5, { immediately: false });
    const sent = sendWorkerEvent(stopped.registry, 'Recommission', [key0], 6);
    assert.deepEqual(sent.unknown, []);
    assert.match(sent.refused[0]?.reason ?? '', /^stopped since 5: it reported its exit/);
    assert.deepEqual(workerEvents(sent.registry), [], 'nothing pending');
    assert.equal(sendWorkerEvent(stopped.registry, 'None', [key0], 7).unchanged.length, 1);
  });

  it('lists a leaving worker from its heartbeat state when its own report to the master was lost', () => {
    let registry = register(register(emptyRegistry(), id0, 0), id1, 0);
    registry = heartbeat(registry, id0, 10, { state: 'InGraceful' }).registry;
    registry = heartbeat(registry, id1, 10, { state: 'InDecommission' }).registry;
    assert.deepEqual(shutdownWorkers(registry), [id0], 'a graceful shutdown is visible without its report');
    assert.deepEqual(decommissioningWorkers(registry), [id1], 'a decommission is visible without its report');
    const later = heartbeat(registry, id0, 20, { state: 'InGraceful' }).registry;
    assert.equal(
      later.shutdown.get(key0)?.since,
      10,
      'a repeated heartbeat keeps the time the worker began leaving',
    );
  });
});

describe('worker registry: events the worker has moved past', () => {
  it('drops a pending event the reported state refuses, with the reason, instead of re-sending it', () => {
    let registry = register(emptyRegistry(), id0, 0);
    registry = heartbeat(registry, id0, 1, { state: 'Idle' }).registry;
    registry = sendWorkerEvent(registry, 'Recommission', [key0], 2).registry;
    const moved = heartbeat(registry, id0, 3, { state: 'InDecommission' });
    assert.equal(moved.changes.droppedEvent?.type, 'Recommission');
    assert.match(moved.changes.droppedEvent?.reason ?? '', /^InDecommission: decommission in progress/);
    assert.deepEqual(moved.reply, { registered: true, expiredShuffleKeys: [], event: 'None' });
  });
});

describe('worker registry: operator actions', () => {
  it('reports unknown, repeated and contradictory exclusions instead of ignoring them', () => {
    let registry = register(register(emptyRegistry(), id0, 0), ids[1]!, 0);
    registry = markWorkerLost(registry, keys[1]!, 1).registry;
    const first = excludeWorkers(
      registry,
      { add: [key0, keys[1]!, 'ghost:1:1:1:1', keys[2]!], remove: [keys[2]!] },
      2,
    );
    assert.deepEqual(first.added, [key0, keys[1]!], 'lost workers can be excluded too');
    assert.deepEqual(first.unknown, ['ghost:1:1:1:1']);
    assert.deepEqual(first.conflicting, [keys[2]!]);
    const second = excludeWorkers(first.registry, { add: [key0], remove: [keys[3]!] }, 3);
    assert.deepEqual(second.alreadyExcluded, [key0]);
    assert.deepEqual(second.notExcluded, [keys[3]!]);
    assert.deepEqual(manuallyExcludedWorkers(second.registry), [id0, ids[1]!]);
  });

  it('treats a repeat as a no-op, None as a clear, and refuses events the worker state forbids', () => {
    let registry = register(register(emptyRegistry(), id0, 0), ids[1]!, 0);
    registry = heartbeat(registry, ids[1]!, 1, { state: 'InGraceful' }).registry;
    const sent = sendWorkerEvent(registry, 'Decommission', [key0, keys[1]!, 'ghost:1:1:1:1'], 10);
    assert.deepEqual(sent.applied, [key0]);
    assert.match(sent.refused[0]?.reason ?? '', /^InGraceful: graceful shutdown in progress/);
    assert.deepEqual(sent.unknown, ['ghost:1:1:1:1']);
    const repeat = sendWorkerEvent(sent.registry, 'Decommission', [key0], 20);
    assert.equal(repeat.unchanged.length, 1);
    assert.deepEqual(workerEvents(repeat.registry), [
      { worker: id0, eventType: 'Decommission', eventTime: 10 },
    ]);
    const cleared = sendWorkerEvent(repeat.registry, 'None', [key0], 30);
    assert.deepEqual(cleared.applied, [key0]);
    assert.ok(isAvailable(cleared.registry, key0), 'isAvailable(cleared.registry, key0)');
    assert.equal(
      sendWorkerEvent(registry, 'Recommission', [key0], 40).unchanged[0]?.note,
      'already in service',
    );
  });

  it('keeps shutdown reports of lost workers until their lost info expires', () => {
    let registry = register(emptyRegistry(), id0, 0);
    const report = reportWorkersUnavailable(registry, [key0, 'ghost:1:1:1:1'], 1);
    assert.deepEqual(report.unknown, ['ghost:1:1:1:1']);
    registry = report.registry;
    registry = detectLostWorkers(registry, 200, 100).registry;
    assert.deepEqual(shutdownWorkers(registry), [id0]);
    assert.deepEqual(
      lostWorkers(registry).map((lost) => lost.lostAt),
      [200],
    );
    assert.deepEqual(
      expireUnavailableInfo(registry, 300, 100).expired,
      [],
      'exactly at the timeout it stays',
    );
    const expired = expireUnavailableInfo(registry, 301, 100);
    assert.deepEqual(expired.expired, [key0]);
    assert.deepEqual(workerCounts(expired.registry).ShutdownWorkerCount, 0);
    assert.deepEqual(removeUnavailableInfo(registry, [keys[1]!]).notLost, [keys[1]!]);
  });
});

describe('worker registry: planned stops', () => {
  it('records a reported exit as stopped, with how the worker left, never as lost', () => {
    let registry = register(register(register(emptyRegistry(), id0, 0), id1, 0), ids[2]!, 0);
    registry = sendWorkerEvent(registry, 'Decommission', [key0], 1).registry;
    registry = reportWorkersDecommissioning(registry, [key0], 2).registry;
    registry = heartbeat(registry, id0, 3, { state: 'InDecommission' }).registry;
    registry = reportWorkersUnavailable(registry, [keys[1]!], 3).registry;
    const decommissioned = recordWorkerStopped(registry, key0, 10, { immediately: false });
    assert.deepEqual(decommissioned.stop, {
      outcome: 'stopped',
      exitKind: 'DECOMMISSION',
      completedEvent: 'Decommission',
    });
    registry = decommissioned.registry;
    registry = recordWorkerStopped(registry, keys[1]!, 11, { immediately: false }).registry;
    registry = recordWorkerStopped(registry, keys[2]!, 12, { immediately: true }).registry;
    assert.deepEqual(
      [...registry.stopped.values()].map((stopped) => [stopped.info.state, stopped.exitKind]),
      [
        ['Exit', 'DECOMMISSION'],
        ['Exit', 'GRACEFUL'],
        ['Exit', 'IMMEDIATELY'],
      ],
    );
    assert.equal(
      recordWorkerStopped(registry, key0, 13, { immediately: false }).stop.outcome,
      'alreadyStopped',
    );
    assert.equal(
      recordWorkerStopped(registry, 'ghost:1:1:1:1', 13, { immediately: true }).stop.outcome,
      'unknown',
    );
    assert.deepEqual(detectLostWorkers(registry, 10_000, 100).lost, [], 'a stopped worker cannot time out');
    assert.deepEqual(decommissioningWorkers(registry), []);
    assert.deepEqual(shutdownWorkers(registry), [id0, id1, ids[2]!]);
    assert.deepEqual(unavailabilityReasons(registry, key0), ['stopped']);
    assert.equal(workerCounts(registry).LostWorkerCount, 0);
    assert.equal(workerCounts(registry).ShutdownWorkerCount, 3);
    assert.deepEqual(workerEvents(registry), []);
  });

  it('turns a late exit report of a worker already declared lost into a stop', () => {
    let registry = register(emptyRegistry(), id0, 0);
    registry = heartbeat(registry, id0, 1, { state: 'InGraceful' }).registry;
    registry = detectLostWorkers(registry, 200, 100).registry;
    registry = recordWorkerStopped(registry, key0, 201, { immediately: false }).registry;
    assert.equal(registry.lost.size, 0);
    assert.equal(registry.stopped.get(key0)?.exitKind, 'GRACEFUL');
  });

  it('forgets stopped workers when their unavailable info expires, or on an operator remove', () => {
    let registry = register(register(emptyRegistry(), id0, 0), id1, 0);
    registry = recordWorkerStopped(registry, key0, 100, { immediately: true }).registry;
    registry = recordWorkerStopped(registry, keys[1]!, 150, { immediately: true }).registry;
    assert.deepEqual(expireUnavailableInfo(registry, 200, 100).expired, []);
    const expired = expireUnavailableInfo(registry, 201, 100);
    assert.deepEqual(expired.expired, [key0]);
    assert.deepEqual(removeUnavailableInfo(expired.registry, [keys[1]!]).removed, [keys[1]!]);
  });

  it('restores a snapshot written before stops were recorded, with none stopped', () => {
    const registry = register(emptyRegistry(), id0, 0);
    const { stopped: _omitted, ...older } = snapshotRegistry(registry);
    assert.deepEqual(restoreRegistry(older).stopped, new Map());
  });
});

describe('worker registry: offered slots', () => {
  it('books offered slots until the next heartbeat and reports allocations it cannot match', () => {
    const registry = register(emptyRegistry(), id0, 0);
    const booked = bookOfferedSlots(
      registry,
      new Map([
        [
          key0,
          new Map([
            ['/d1', 3],
            ['/nope', 1],
          ]),
        ],
        ['ghost:1:1:1:1', new Map([['/d1', 1]])],
      ]),
      1 << 20,
    );
    const d1 = booked.registry.workers.get(key0)?.disks[0];
    assert.equal(d1?.activeSlots, 3);
    assert.equal(d1?.usableBytes, (1 << 30) - 3 * (1 << 20));
    assert.deepEqual(booked.unmatched, [
      { worker: key0, mountPoint: '/nope' },
      { worker: 'ghost:1:1:1:1', mountPoint: '/d1' },
    ]);
    const full = bookOfferedSlots(registry, new Map([[key0, new Map([['/d2', 5000]])]]), 1 << 20);
    assert.equal(full.registry.workers.get(key0)?.disks[1]?.usableBytes, 0, 'never below zero');
    assert.deepEqual(heartbeat(booked.registry, id0, 1).registry.workers.get(key0)?.disks, HEALTHY);
  });
});
