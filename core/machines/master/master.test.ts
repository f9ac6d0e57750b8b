import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { workerKey, type DiskInfo, type WorkerId, type WorkerState } from '../../domain/index.ts';
import { availableWorkers, workerCounts } from '../../lifecycle/index.ts';
import type { RequestSlots } from '../../protocol/messages.ts';
import type { Effect } from '../effects.ts';
import { Harness, metricNames, ofKind, onlySent, sentOf, workerId } from '../worker/test-kit.ts';
import {
  initialMasterState,
  MASTER_STATE_KEY,
  MASTER_STATE_PREFIX,
  MASTER_TIMERS,
  masterMachine,
  type MasterConfig,
  type MasterState,
} from './index.ts';
import { storedBy, testMasterConfig } from './testing.ts';

const LM = 'lm-app';
const GiB = 1024 ** 3;

function disks(status: DiskInfo['status'] = 'HEALTHY'): DiskInfo[] {
  return [
    {
      mountPoint: '/d1',
      type: 'HDD',
      usableBytes: 100 * GiB,
      totalBytes: 100 * GiB,
      status,
      avgFlushTimeNs: 0,
      avgFetchTimeNs: 0,
      activeSlots: 0,
    },
  ];
}

function master(overrides: Partial<MasterConfig> = {}) {
  const harness = new Harness(masterMachine, initialMasterState(testMasterConfig(overrides)));
  harness.start();
  return harness;
}

let nextRequest = 1000;

function logEvents(effects: readonly Effect[], event: string): Record<string, unknown>[] {
  return ofKind(effects, 'log')
    .filter((line) => line.event === event)
    .map((line) => line.fields ?? {});
}

function register(harness: Harness<MasterState>, id: WorkerId, rack = '/r1'): Effect[] {
  return harness.receive(
    workerKey(id),
    { type: 'RegisterWorker', worker: id, disks: disks(), networkLocation: rack },
    { requestId: (nextRequest += 1) },
  );
}

function heartbeat(
  harness: Harness<MasterState>,
  id: WorkerId,
  options: { keys?: string[]; state?: WorkerState; status?: DiskInfo['status']; highWorkload?: boolean } = {},
) {
  const effects = harness.receive(
    workerKey(id),
    {
      type: 'WorkerHeartbeat',
      worker: id,
      disks: disks(options.status),
      activeShuffleKeys: options.keys ?? [],
      highWorkload: options.highWorkload ?? false,
      state: options.state ?? 'Normal',
    },
    { requestId: (nextRequest += 1) },
  );
  return { effects, reply: onlySent(effects, 'WorkerHeartbeatResponse').message };
}

function requestSlots(harness: Harness<MasterState>, overrides: Partial<RequestSlots> = {}) {
  const effects = harness.receive(
    LM,
    {
      type: 'RequestSlots',
      appId: 'app',
      shuffleId: 1,
      partitionIds: [0, 1, 2, 3],
      replicate: false,
      rackAware: false,
      availableTypes: 2,
      excludedWorkers: [],
      maxWorkers: 10_000,
      ...overrides,
    },
    { requestId: (nextRequest += 1) },
  );
  return { effects, reply: onlySent(effects, 'RequestSlotsResponse').message };
}

function persistedKeys(effects: readonly Effect[]): string[] {
  return ofKind(effects, 'persist').map((persist) => persist.key);
}

function workerEntry(section: string, id: WorkerId): string {
  return `${MASTER_STATE_PREFIX}workers/${section}/${encodeURIComponent(workerKey(id))}`;
}

function offeredKeys(reply: ReturnType<typeof requestSlots>['reply']): { used: string[]; padding: string[] } {
  const used = reply.workerResource
    .filter((r) => r.primaries.length + r.replicas.length > 0)
    .map((r) => workerKey(r.worker));
  const padding = reply.workerResource
    .filter((r) => r.primaries.length + r.replicas.length === 0)
    .map((r) => workerKey(r.worker));
  return { used, padding };
}

const W1 = workerId('w1');
const W2 = workerId('w2');
const W3 = workerId('w3');

/** W1 and W2 registered at 0; at 100 s W2 heartbeats and W1 stays silent (the timeout is 120 s). */
function w1SilentSinceStart(): Harness<MasterState> {
  const harness = master();
  register(harness, W1);
  register(harness, W2);
  harness.now = 100_000;
  heartbeat(harness, W2);
  return harness;
}

describe('master: workers', () => {
  it('arms its periodic checks at start', () => {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const timers = ofKind(harness.start(), 'setTimer').map((t) => [t.name, t.at]);
    assert.deepEqual(timers, [
      [MASTER_TIMERS.lostWorkers, 120_000],
      [MASTER_TIMERS.applications, 150_000],
      [MASTER_TIMERS.unavailableInfo, 900_000],
      [MASTER_TIMERS.partitionSize, 300_000],
      [MASTER_TIMERS.quota, 30_000],
    ]);
  });

  it('registers a worker, persisting before it answers, and counts it', () => {
    const harness = master();
    const effects = register(harness, W1);
    assert.equal(effects[0]?.kind, 'persist', 'durable before acknowledged');
    const persists = ofKind(effects, 'persist');
    assert.ok(
      persists.every((persist) => persist.store === 'coordination'),
      'the coordination store',
    );
    assert.deepEqual(
      persists.map((persist) => persist.key),
      [workerEntry('workers', W1)],
      'only the worker registered is written',
    );
    assert.equal(onlySent(effects, 'RegisterWorkerResponse').message.success, true);
    const gauges = new Map(ofKind(effects, 'metric').map((m) => [m.name, m.value]));
    assert.equal(gauges.get('WorkerCount'), 1);
    assert.equal(gauges.get('AvailableWorkerCount'), 1);
  });

  it('refuses a host its deny pattern names', () => {
    const harness = master({ hosts: { allow: null, deny: /w1/ } });
    const reply = onlySent(register(harness, W1), 'RegisterWorkerResponse').message;
    assert.equal(reply.success, false);
    assert.match(reply.message, /w1/);
  });

  it('tells an unknown worker to register again', () => {
    const harness = master();
    const { reply, effects } = heartbeat(harness, W1);
    assert.equal(reply.registered, false);
    assert.equal(ofKind(effects, 'persist').length, 0);
  });

  it('does not persist a heartbeat that changes nothing but time and disks', () => {
    const harness = master();
    register(harness, W1);
    const { effects } = heartbeat(harness, W1);
    assert.equal(ofKind(effects, 'persist').length, 0);
  });

  it('declares a silent worker lost at the check after its timeout, and stops offering it', () => {
    const harness = w1SilentSinceStart();
    const check = harness.timer(MASTER_TIMERS.lostWorkers, 120_001);
    assert.ok(
      ofKind(check, 'log').some(
        (l) => l.event === 'master.worker.lost' && l.fields?.worker === workerKey(W1),
      ),
      "ofKind(check, 'log').some((l) => l.event === 'master.worker.lost' && l.fields?.worker === workerKey(W1))",
    );
    assert.ok(
      ofKind(check, 'metric').some((m) => m.name === 'LostWorkerCount' && m.value === 1),
      "ofKind(check, 'metric').some((m) => m.name === 'LostWorkerCount' && m.value === 1)",
    );
    assert.ok(
      ofKind(check, 'setTimer').some((t) => t.name === MASTER_TIMERS.lostWorkers && t.at === 240_001),
      "ofKind(check, 'setTimer').some((t) => t.name === MASTER_TIMERS.lostWorkers && t.at === 240_001)",
    );
    const { used, padding } = offeredKeys(requestSlots(harness).reply);
    assert.deepEqual([...used, ...padding], [workerKey(W2)]);
    assert.equal(heartbeat(harness, W1).reply.registered, false, 'a lost worker must register again');
  });

  it('judges silence when it offers: a request that comes before the check does not get a silent worker', () => {
    // Seed 346665: a master paused past the timeout took a queued RequestSlots before its check's timer.
    const harness = w1SilentSinceStart();
    harness.now = 120_001; // W1 silent for more than the timeout (120 s); the check's timer has not come
    const { effects, reply } = requestSlots(harness);
    const { used, padding } = offeredKeys(reply);
    assert.deepEqual([...used, ...padding], [workerKey(W2)]);
    assert.deepEqual(
      logEvents(effects, 'master.worker.lost').map((line) => line.worker),
      [workerKey(W1)],
      'declared lost then, as the check would have',
    );
    assert.equal(heartbeat(harness, W1).reply.registered, false, 'a lost worker must register again');
    // A heartbeat exactly one timeout ago still counts, as at the check.
    harness.now = 220_001;
    heartbeat(harness, W2);
    harness.now = 340_001;
    assert.deepEqual(offeredKeys(requestSlots(harness, { shuffleId: 2 }).reply).used, [workerKey(W2)]);
  });

  it('judges silence when it answers an application heartbeat, whose available workers revives move to', () => {
    const harness = w1SilentSinceStart();
    harness.now = 120_001; // W1 silent for more than the timeout; the check's timer has not come
    const effects = harness.receive(
      LM,
      { type: 'ApplicationHeartbeat', appId: 'app', bytesWritten: 0, fileCount: 0 },
      { requestId: 1 },
    );
    const reply = onlySent(effects, 'ApplicationHeartbeatResponse').message;
    assert.deepEqual(
      reply.availableWorkers?.map(({ worker }) => workerKey(worker)),
      [workerKey(W2)],
    );
    assert.deepEqual(reply.unknownWorkers.map(workerKey), [workerKey(W1)], 'named gone at once');
    assert.deepEqual(
      logEvents(effects, 'master.worker.lost').map((line) => line.worker),
      [workerKey(W1)],
    );
  });

  it('a worker reporting that it exits immediately is stopped at once, not lost', () => {
    const harness = master();
    register(harness, W1);
    const effects = harness.receive(workerKey(W1), { type: 'ReportWorkerLost', worker: W1 });
    const registry = harness.state.durable.workers;
    assert.equal(registry.lost.has(workerKey(W1)), false);
    assert.equal(registry.stopped.get(workerKey(W1))?.exitKind, 'IMMEDIATELY');
    assert.deepEqual(logEvents(effects, 'master.worker.stopped'), [
      { worker: workerKey(W1), exit: 'IMMEDIATELY' },
    ]);
    assert.equal(logEvents(effects, 'master.worker.lost').length, 0);
    // Its exit heartbeat follows: the same news, nothing more to record or log.
    const again = heartbeat(harness, W1, { state: 'Exit' });
    assert.equal(ofKind(again.effects, 'persist').length, 0);
    assert.equal(logEvents(again.effects, 'master.worker.stopped').length, 0);
  });

  it('a decommissioned worker that reports its exit is stopped, out of decommissioning, never lost, across a restart', () => {
    const harness = master();
    register(harness, W1);
    register(harness, W2);
    register(harness, W3);
    harness.step({
      kind: 'admin',
      command: { type: 'workerEvent', eventType: 'DECOMMISSION', workers: [workerKey(W1)] },
    });
    harness.receive(workerKey(W1), { type: 'ReportWorkerDecommission', worker: W1 });
    heartbeat(harness, W1, { state: 'InDecommission' });
    harness.receive(workerKey(W2), { type: 'ReportWorkerUnavailable', worker: W2 });
    heartbeat(harness, W2, { state: 'InGraceful' });
    const exited = heartbeat(harness, W1, { state: 'Exit' });
    assert.deepEqual(logEvents(exited.effects, 'master.worker.stopped'), [
      { worker: workerKey(W1), exit: 'DECOMMISSION' },
    ]);
    assert.deepEqual(logEvents(exited.effects, 'master.worker.eventCompleted'), [
      { worker: workerKey(W1), event: 'Decommission' },
    ]);
    heartbeat(harness, W2, { state: 'Exit' });
    const after = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    after.now = harness.now;
    after.start(storedBy(harness.all));
    // W3 falls silent: a real loss. W1 and W2 stopped: never lost, however long the master waits.
    const timeout = testMasterConfig().workerHeartbeatTimeoutMs;
    const checks = [
      ...after.timer(MASTER_TIMERS.lostWorkers, after.now + timeout + 1),
      ...after.timer(MASTER_TIMERS.lostWorkers, after.now + 2 * timeout + 1),
    ];
    assert.deepEqual(
      logEvents(checks, 'master.worker.lost').map((line) => line.worker),
      [workerKey(W3)],
    );
    const registry = after.state.durable.workers;
    assert.deepEqual(
      [...registry.stopped.values()].map((stopped) => [stopped.info.id, stopped.exitKind]),
      [
        [W1, 'DECOMMISSION'],
        [W2, 'GRACEFUL'],
      ],
    );
    assert.equal(registry.decommissioning.size, 0);
    assert.equal(registry.shutdown.size, 0);
    assert.deepEqual(workerCounts(registry), {
      WorkerCount: 0,
      LostWorkerCount: 1,
      ExcludedWorkerCount: 0,
      AvailableWorkerCount: 0,
      ShutdownWorkerCount: 2,
      DecommissionWorkerCount: 0,
    });
    // Back again: it registers like any worker and leaves the stopped ones.
    register(after, W1);
    assert.equal(after.state.durable.workers.stopped.has(workerKey(W1)), false);
    assert.equal(after.state.durable.workers.workers.has(workerKey(W1)), true);
  });

  it('excludes automatically on unhealthy disks and releases on a healthy heartbeat', () => {
    const harness = master();
    register(harness, W1);
    const bad = heartbeat(harness, W1, { status: 'READ_OR_WRITE_FAILURE' });
    assert.deepEqual(
      persistedKeys(bad.effects),
      [workerEntry('workers', W1), workerEntry('autoExcluded', W1)],
      'an exclusion is a membership change',
    );
    assert.equal(requestSlots(harness).reply.status, 'WORKER_EXCLUDED');
    heartbeat(harness, W1);
    assert.equal(requestSlots(harness).reply.status, 'SUCCESS');
  });
});

describe('master: applications and slots', () => {
  it('refuses a client release it does not admit', () => {
    const harness = master();
    register(harness, W1);
    const effects = harness.receive(
      LM,
      { type: 'RegisterApplication', appId: 'app', user: 'u' },
      { requestId: 1, fromRelease: '0.2.0' },
    );
    const answer = onlySent(effects, 'StatusResponse').message;
    assert.equal(answer.status, 'CLIENT_RELEASE_REFUSED');
    assert.match(answer.message, /upgrade masters and workers first, then clients/);
    const slots = harness.receive(
      LM,
      {
        type: 'RequestSlots',
        appId: 'app',
        shuffleId: 1,
        partitionIds: [0],
        replicate: false,
        rackAware: false,
        availableTypes: 2,
        excludedWorkers: [],
        maxWorkers: 1,
      },
      { requestId: 2, fromRelease: '0.2.0' },
    );
    assert.equal(onlySent(slots, 'StatusResponse').message.status, 'CLIENT_RELEASE_REFUSED');
    assert.equal(sentOf(slots, 'RequestSlotsResponse').length, 0);
    assert.equal(harness.state.durable.applications.apps.size, 0);
  });

  it('offers slots with padding workers, registers the shuffle and books the slots', () => {
    const harness = master({
      slots: {
        policy: { name: 'ROUNDROBIN' },
        budgetMode: 'strict',
        maxWorkers: 1,
        extraSlots: 2,
        minWorkers: 100,
      },
    });
    for (const id of [W1, W2, W3]) register(harness, id);
    const { reply, effects } = requestSlots(harness);
    assert.equal(reply.status, 'SUCCESS');
    const { used, padding } = offeredKeys(reply);
    assert.equal(used.length, 1, 'maxWorkers 1');
    assert.equal(padding.length, 2, 'the other two workers pad the offer');
    assert.equal(reply.workerResource.flatMap((r) => r.primaries).length, 4);
    assert.deepEqual(
      persistedKeys(effects),
      [
        `${MASTER_STATE_PREFIX}apps/app`,
        `${MASTER_STATE_PREFIX}shuffles/app/1`,
        `${MASTER_STATE_PREFIX}bookings/0/0`,
      ],
      'the shuffle registered and the booking, nothing else (the booked worker’s entry is not rewritten)',
    );
    assert.ok(
      ofKind(effects, 'metric').some((m) => m.name === 'RegisteredShuffleCount' && m.value === 1),
      "ofKind(effects, 'metric').some((m) => m.name === 'RegisteredShuffleCount' && m.value === 1)",
    );
    const booked = harness.state.durable.workers.workers.get(used[0]!)!.disks[0]!;
    assert.equal(booked.activeSlots, 4, 'offered slots count until the next heartbeat');
  });

  it('reports every partition it cannot place, with the reason', () => {
    const harness = master();
    register(harness, W1);
    const { reply, effects } = requestSlots(harness, { replicate: true });
    assert.equal(reply.status, 'SLOT_NOT_AVAILABLE');
    assert.deepEqual(
      reply.unplaced.map((u) => u.partitionId),
      [0, 1, 2, 3],
    );
    assert.ok(
      reply.unplaced.every((u) => u.reason === 'no-replica-candidate'),
      "reply.unplaced.every((u) => u.reason === 'no-replica-candidate')",
    );
    assert.ok(
      metricNames(effects).includes('RequestSlotsFailed'),
      "metricNames(effects).includes('RequestSlotsFailed')",
    );
  });

  it('answers application heartbeats with excluded, lost and shutting workers', () => {
    const harness = master();
    for (const id of [W1, W2, W3]) register(harness, id);
    harness.step({ kind: 'admin', command: { type: 'excludeWorkers', add: [workerKey(W1)], remove: [] } });
    harness.receive(workerKey(W2), { type: 'ReportWorkerUnavailable', worker: W2 });
    harness.receive(workerKey(W3), { type: 'ReportWorkerLost', worker: W3 });
    const reply = onlySent(
      harness.receive(
        LM,
        { type: 'ApplicationHeartbeat', appId: 'app', bytesWritten: 0, fileCount: 0 },
        { requestId: 1 },
      ),
      'ApplicationHeartbeatResponse',
    ).message;
    assert.deepEqual(reply.excludedWorkers.map(workerKey), [workerKey(W1)]);
    // W3 exits immediately: a planned stop, listed as shut down and named gone, so that pushes to it fail fast.
    assert.deepEqual(reply.shuttingWorkers.map(workerKey), [workerKey(W2), workerKey(W3)]);
    assert.deepEqual(reply.unknownWorkers.map(workerKey), [workerKey(W3)]);
    assert.equal(requestSlots(harness).reply.status, 'WORKER_EXCLUDED');
  });

  it('delivers an operator event in the next heartbeat reply and keeps the worker out of offers', () => {
    const harness = master();
    register(harness, W1);
    register(harness, W2);
    harness.step({
      kind: 'admin',
      command: { type: 'workerEvent', eventType: 'DECOMMISSION', workers: [workerKey(W1)] },
    });
    assert.equal(heartbeat(harness, W1).reply.workerEvent, 'Decommission');
    assert.equal(heartbeat(harness, W2).reply.workerEvent, 'None');
    const { used, padding } = offeredKeys(requestSlots(harness).reply);
    assert.deepEqual([...used, ...padding], [workerKey(W2)]);
  });

  it('expires a worker-held shuffle once it is unregistered', () => {
    const harness = master();
    register(harness, W1);
    requestSlots(harness);
    assert.deepEqual(heartbeat(harness, W1, { keys: ['app-1'] }).reply.expiredShuffleKeys, []);
    harness.receive(LM, { type: 'UnregisterShuffle', appId: 'app', shuffleId: 1 }, { requestId: 1 });
    assert.deepEqual(heartbeat(harness, W1, { keys: ['app-1'] }).reply.expiredShuffleKeys, ['app-1']);
  });

  it('started without its state, keeps the shuffles of applications it has not heard of for one application timeout', () => {
    const harness = master(); // a master whose state was lost: it knows no application
    register(harness, W1);
    assert.deepEqual(heartbeat(harness, W1, { keys: ['app-1', 'gone-3'] }).reply.expiredShuffleKeys, []);
    // The live application's heartbeat names its placed shuffles: the master takes them back and says so.
    const revised = harness.receive(
      LM,
      { type: 'ApplicationHeartbeat', appId: 'app', bytesWritten: 0, fileCount: 0, shuffleIds: [1] },
      { requestId: 1 },
    );
    assert.ok(
      ofKind(revised, 'log').some((l) => l.event === 'master.application.shufflesRevised'),
      'the master says it took the shuffle back',
    );
    assert.ok(ofKind(revised, 'persist').length > 0, 'the revised shuffle is written down');
    // An application that unregisters while the master is new is not kept waiting for.
    harness.receive(LM, { type: 'UnregisterApplication', appId: 'ended' }, { requestId: 2 });
    assert.deepEqual(
      heartbeat(harness, W1, { keys: ['app-1', 'gone-3', 'ended-4'] }).reply.expiredShuffleKeys,
      ['ended-4'],
    );
    harness.now = testMasterConfig().applicationTimeoutMs;
    assert.deepEqual(
      heartbeat(harness, W1, { keys: ['app-1', 'gone-3'] }).reply.expiredShuffleKeys,
      ['gone-3'],
      'a timeout later, an application still unheard of is taken for ended; the revised shuffle stays',
    );
  });

  it('forgets an application after its timeout, and its shuffles with it', () => {
    const harness = master();
    register(harness, W1);
    requestSlots(harness);
    harness.now = 290_000;
    heartbeat(harness, W1);
    const check = harness.timer(MASTER_TIMERS.applications, 300_001);
    assert.ok(
      ofKind(check, 'log').some((l) => l.event === 'master.application.lost'),
      "ofKind(check, 'log').some((l) => l.event === 'master.application.lost')",
    );
    assert.deepEqual(heartbeat(harness, W1, { keys: ['app-1'] }).reply.expiredShuffleKeys, ['app-1']);
  });

  it('updates the estimated partition size from application heartbeats, within its bounds: first after the initial delay, then every interval', () => {
    const harness = master();
    harness.receive(
      LM,
      { type: 'ApplicationHeartbeat', appId: 'app', bytesWritten: 1000 * 1024 ** 2, fileCount: 10 },
      { requestId: 1 },
    );
    const update = harness.timer(MASTER_TIMERS.partitionSize, 300_000);
    const size = ofKind(update, 'metric').find((m) => m.name === 'PartitionSize');
    assert.equal(size?.value, 100 * 1024 ** 2);
    assert.deepEqual(
      ofKind(update, 'setTimer').map((t) => [t.name, t.at]),
      [[MASTER_TIMERS.partitionSize, 900_000]],
      'the next update one interval later',
    );
    harness.receive(
      LM,
      { type: 'ApplicationHeartbeat', appId: 'app', bytesWritten: 10, fileCount: 10 },
      { requestId: 2 },
    );
    harness.timer(MASTER_TIMERS.partitionSize, 900_000);
    assert.equal(harness.state.durable.estimatedPartitionSize, 8 * 1024 ** 2, 'clamped to the minimum');
  });
});

describe('master: restart', () => {
  it('persists the slots it booked before it offers them, so that a restarted master does not offer the same budget again', () => {
    const before = master();
    const estimate = testMasterConfig().partitionSize.initialSize;
    const small = disks().map((disk) => ({ ...disk, usableBytes: 4 * estimate, totalBytes: 4 * estimate }));
    before.receive(
      workerKey(W1),
      { type: 'RegisterWorker', worker: W1, disks: small, networkLocation: '/r1' },
      { requestId: (nextRequest += 1) },
    );
    assert.equal(requestSlots(before, { partitionIds: [0, 1] }).reply.status, 'SUCCESS');
    // The same shuffle again (a partial offer retried): nothing new to register, but two more slots booked.
    const again = requestSlots(before, { partitionIds: [2, 3] });
    assert.equal(again.reply.status, 'SUCCESS');
    assert.equal(again.effects[0]?.kind, 'persist', 'the booking is durable before the offer is sent');
    const after = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    after.start(storedBy(before.all));
    const third = requestSlots(after, { shuffleId: 2, partitionIds: [0] });
    assert.equal(third.reply.status, 'SLOT_NOT_AVAILABLE', 'the disk budget was used up before the restart');
  });

  it('writes a worker whose heartbeat moved a disk to another budget, so that a restarted master offers no room that is gone (swarm seed 123931)', () => {
    const before = master();
    const estimate = testMasterConfig().partitionSize.initialSize;
    const sized = (usable: number) =>
      disks().map((disk) => ({ ...disk, usableBytes: usable, totalBytes: 2 * estimate }));
    before.receive(
      workerKey(W1),
      { type: 'RegisterWorker', worker: W1, disks: sized(estimate + 1000), networkLocation: '/r1' },
      { requestId: (nextRequest += 1) },
    );
    assert.equal(
      requestSlots(before, { partitionIds: [0] }).reply.status,
      'SUCCESS',
      'the one slot of its budget',
    );
    const beat = (usable: number) =>
      before.receive(
        workerKey(W1),
        {
          type: 'WorkerHeartbeat',
          worker: W1,
          disks: sized(usable),
          activeShuffleKeys: ['app-1'],
          highWorkload: false,
          state: 'Normal',
        },
        { requestId: (nextRequest += 1) },
      );
    // 2,000 bytes written since the registration: no room for another partition, and the booking is swept.
    assert.ok(
      persistedKeys(beat(estimate - 1000)).includes(workerEntry('workers', W1)),
      'a heartbeat that moved the disk to another budget is written',
    );
    assert.ok(
      !persistedKeys(beat(estimate - 1500)).includes(workerEntry('workers', W1)),
      'one that moved numbers within the same budget is not',
    );
    const after = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    after.start(storedBy(before.all));
    const offer = requestSlots(after, { shuffleId: 2, partitionIds: [0] });
    assert.equal(
      offer.reply.status,
      'SLOT_NOT_AVAILABLE',
      'the restored disk has the budget it last reported, 0',
    );
  });

  it('restores workers, applications and shuffles from the coordination store', () => {
    const before = master();
    register(before, W1);
    requestSlots(before);
    const after = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    after.now = 500_000;
    const started = after.start(storedBy(before.all));
    assert.ok(
      ofKind(started, 'metric').some((m) => m.name === 'WorkerCount' && m.value === 1),
      "ofKind(started, 'metric').some((m) => m.name === 'WorkerCount' && m.value === 1)",
    );
    const { reply } = heartbeat(after, W1, { keys: ['app-1'] });
    assert.equal(reply.registered, true);
    assert.deepEqual(reply.expiredShuffleKeys, [], 'the shuffle survived the restart');
    // Restored workers get a full timeout from the restart before they can be declared lost.
    const check = after.timer(MASTER_TIMERS.lostWorkers, 619_999);
    assert.equal(ofKind(check, 'log').filter((l) => l.event === 'master.worker.lost').length, 0);
  });

  it('refuses to start from a store it cannot read, saying how to recover', () => {
    const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
    const effects = harness.start(new Map([[MASTER_STATE_KEY, '{"version":7}']]));
    const [exit] = ofKind(effects, 'exit');
    assert.equal(exit?.code, 1);
    assert.match(exit.reason, /delete the keys under master\/state\//);
  });
});

describe('master: property', () => {
  type Command =
    | { kind: 'register'; worker: number }
    | { kind: 'heartbeat'; worker: number; unhealthy: boolean; highWorkload: boolean; state: WorkerState }
    | { kind: 'exclude'; worker: number; add: boolean }
    | { kind: 'event'; worker: number; type: 'DECOMMISSION' | 'GRACEFUL' | 'NONE' | 'RECOMMISSION' }
    | {
        kind: 'report';
        worker: number;
        type: 'ReportWorkerUnavailable' | 'ReportWorkerDecommission' | 'ReportWorkerLost';
      }
    | { kind: 'lostCheck'; advance: number }
    | { kind: 'request'; replicate: boolean };

  const WORKERS = [0, 1, 2, 3, 4, 5].map((i) => workerId(`h${i}`, 9000 + i * 10));
  const worker = fc.integer({ min: 0, max: WORKERS.length - 1 });
  const command: fc.Arbitrary<Command> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('register' as const), worker }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('heartbeat' as const),
        worker,
        unhealthy: fc.constantFrom(false, false, false, true),
        highWorkload: fc.constantFrom(false, false, false, true),
        state: fc.constantFrom<WorkerState>(
          'Normal',
          'Normal',
          'Normal',
          'Idle',
          'InGraceful',
          'InDecommission',
          'Exit',
        ),
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
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('lostCheck' as const),
        advance: fc.integer({ min: 0, max: 200_000 }),
      }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('request' as const), replicate: fc.boolean() }) },
  );

  it('never offers (or pads with) a worker that is not available', () => {
    let offers = 0;
    fc.assert(
      fc.property(fc.array(command, { minLength: 10, maxLength: 40 }), (commands) => {
        const harness = master({
          slots: {
            policy: { name: 'ROUNDROBIN' },
            budgetMode: 'strict',
            maxWorkers: 3,
            extraSlots: 2,
            minWorkers: 100,
          },
        });
        for (const c of commands) {
          const id = WORKERS['worker' in c ? c.worker : 0]!;
          switch (c.kind) {
            case 'register':
              register(harness, id, `/r${c.worker % 2}`);
              break;
            case 'heartbeat':
              heartbeat(harness, id, {
                status: c.unhealthy ? 'IO_HANG' : 'HEALTHY',
                highWorkload: c.highWorkload,
                state: c.state,
              });
              break;
            case 'exclude':
              harness.step({
                kind: 'admin',
                command: {
                  type: 'excludeWorkers',
                  add: c.add ? [workerKey(id)] : [],
                  remove: c.add ? [] : [workerKey(id)],
                },
              });
              break;
            case 'event':
              harness.step({
                kind: 'admin',
                command: { type: 'workerEvent', eventType: c.type, workers: [workerKey(id)] },
              });
              break;
            case 'report':
              harness.receive(workerKey(id), { type: c.type, worker: id });
              break;
            case 'lostCheck':
              harness.timer(MASTER_TIMERS.lostWorkers, harness.now + c.advance);
              break;
            case 'request': {
              const available = new Set(
                availableWorkers(harness.state.durable.workers).map((w) => workerKey(w.id)),
              );
              const { reply } = requestSlots(harness, { replicate: c.replicate });
              for (const resource of reply.workerResource) {
                assert.ok(
                  available.has(workerKey(resource.worker)),
                  `offered unavailable ${workerKey(resource.worker)}`,
                );
              }
              if (reply.status === 'SUCCESS') {
                offers += 1;
                assert.equal(reply.workerResource.flatMap((r) => r.primaries).length, 4);
              }
              break;
            }
          }
        }
      }),
      { numRuns: 150 },
    );
    assert.ok(
      offers > 50,
      `the commands should lead to offers often enough to mean something (got ${offers})`,
    );
  });
});
