import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { workerKey, type PartitionLocation, type StatusCode, type WorkerId } from '../../domain/index.ts';
import type { Message, MessageOf, RequestSlotsResponse } from '../../protocol/messages.ts';
import type { Release } from '../../release/version.ts';
import type { Probe } from '../testing/in-memory-cluster.ts';
import { ProbeHarness } from '../testing/probe-harness.ts';
import {
  initialLifecycleManagerState,
  lifecycleManagerMachine,
  type LifecycleManagerConfig,
  type LifecycleManagerState,
} from './index.ts';

const LM = 'lm-app';
const MASTER = 'master-0';

const baseConfig: LifecycleManagerConfig = {
  release: '0.6.0',
  appId: 'app',
  user: 'alice',
  master: MASTER,
  replicate: true,
  rackAware: false,
  availableTypes: ['HDD'],
  maxWorkers: 10_000,
  split: { thresholdBytes: 1 << 30, mode: 'SOFT' },
  reviveBatchIntervalMs: 100,
  reserveMaxRetries: 3,
  requestSlotsMaxRetries: 1,
  heartbeatIntervalMs: 10_000,
  requestTimeoutMs: 5_000,
  maxRequestAttempts: 3,
  fileGroupWaitMs: 2_000,
  excludePeerWorkerOnFailure: true,
  excludedWorkerExpireMs: 180_000,
  filterExcludedWorkers: false,
};

const worker = (i: number): WorkerId => ({
  host: `w${i}`,
  rpcPort: 1,
  pushPort: 2,
  fetchPort: 3,
  replicatePort: 4,
});

/** An offer: partition p's primary on worker p mod n, its replica on the next worker; `padding` extra workers. */
/** The master's answer to the manager's next application heartbeat, listing these workers (none by default). */
function answerHeartbeat(
  h: Harness,
  lists: { excluded?: WorkerId[]; shutting?: WorkerId[]; available?: WorkerId[] } = {},
): void {
  h.answer(h.master, 'ApplicationHeartbeat', () => ({
    type: 'ApplicationHeartbeatResponse',
    excludedWorkers: lists.excluded ?? [],
    unknownWorkers: [],
    shuttingWorkers: lists.shutting ?? [],
    ...(lists.available === undefined
      ? {}
      : {
          availableWorkers: lists.available.map((id) => ({
            worker: id,
            networkLocation: `/rack-${Number(id.host.slice(1)) % 2}`,
          })),
        }),
  }));
}

function offer(partitions: number, workers: number, padding: number, replicate = true): RequestSlotsResponse {
  const resources = Array.from({ length: workers + padding }, (_, i) => ({
    worker: worker(i),
    networkLocation: `/rack-${i % 2}`,
    primaries: [] as PartitionLocation[],
    replicas: [] as PartitionLocation[],
  }));
  for (let p = 0; p < partitions; p += 1) {
    const storage = { type: 'HDD' as const, mountPoint: '/d1', availableTypes: 2 };
    const primary: PartitionLocation = {
      partitionId: p,
      epoch: 0,
      worker: worker(p % workers),
      mode: 'PRIMARY',
      storage,
    };
    if (!replicate) {
      resources[p % workers]!.primaries.push(primary);
      continue;
    }
    const replica: PartitionLocation = {
      partitionId: p,
      epoch: 0,
      worker: worker((p + 1) % workers),
      mode: 'REPLICA',
      storage,
    };
    resources[p % workers]!.primaries.push({ ...primary, peer: replica });
    resources[(p + 1) % workers]!.replicas.push({ ...replica, peer: primary });
  }
  return {
    type: 'RequestSlotsResponse',
    status: 'SUCCESS',
    workerResource: resources,
    unplaced: [],
    message: '',
  };
}

/** The LM with probes standing in for the master, the workers and the tasks. */
class Harness extends ProbeHarness<LifecycleManagerState> {
  readonly lm;
  readonly master: Probe;
  readonly workers: Probe[];

  private readonly release: Release;

  constructor(config: Partial<LifecycleManagerConfig> = {}, workers = 4) {
    super(
      LM,
      {
        machine: lifecycleManagerMachine,
        init: () => initialLifecycleManagerState({ ...baseConfig, ...config }),
      },
      { seed: 7 },
    );
    this.lm = this.node;
    this.release = config.release ?? baseConfig.release;
    this.master = this.probe(MASTER);
    this.workers = Array.from({ length: workers }, (_, i) => this.probe(workerKey(worker(i))));
    this.start();
    this.advance(10);
  }

  task(id: string): Probe {
    return this.probe(id);
  }

  /** Task `from`, of the application's release as tasks are, sends a request to the LM. */
  ask(from: string, message: Message, requestId = 1): void {
    this.probe(from);
    this.cluster.inject({ from, to: LM, fromRelease: this.release, message, requestId });
  }

  registerApp(status: StatusCode = 'SUCCESS', message = ''): void {
    this.answer(this.master, 'RegisterApplication', () => ({ type: 'StatusResponse', status, message }));
    this.advance(10);
  }

  reserveAll(status: StatusCode = 'SUCCESS', only?: (worker: Probe) => boolean): void {
    for (const w of this.workers) {
      if (only !== undefined && !only(w)) continue;
      this.answer(w, 'ReserveSlots', () => ({ type: 'StatusResponse', status, message: status }));
    }
    this.advance(10);
  }

  /** App registered, one shuffle of `partitions` × `maps` registered on `workers` workers with `padding` spares. */
  registered(
    partitions: number,
    maps: number,
    workers = 3,
    padding = 1,
  ): MessageOf<'RegisterShuffleResponse'> {
    this.registerApp();
    this.ask('map-0', {
      type: 'RegisterShuffle',
      appId: 'app',
      shuffleId: 0,
      numMappers: maps,
      numPartitions: partitions,
    });
    this.advance(10);
    this.answer(this.master, 'RequestSlots', () => offer(partitions, workers, padding));
    this.advance(10);
    this.reserveAll();
    return this.last(this.task('map-0'), 'RegisterShuffleResponse');
  }
}

describe('lifecycle manager: operator commands', () => {
  it('answers an operator command with a refusal that says where to send it, rather than dropping it', () => {
    const h = new Harness();
    h.cluster.admin(LM, { type: 'excludeWorkers', add: ['w1:1:2:3:4'], remove: [] }, 7);
    h.advance(1);
    const replies = h.cluster.adminReplies.filter((reply) => reply.commandId === 7);
    assert.equal(replies.length, 1, 'exactly one answer');
    assert.equal(replies[0]!.success, false);
    assert.match(replies[0]!.message, /takes no operator commands; send excludeWorkers to the master/);
  });
});

describe('lifecycle manager: registration', () => {
  it('registers the application, then asks once for slots however many tasks register the shuffle', () => {
    const h = new Harness();
    assert.deepEqual(h.last(h.master, 'RegisterApplication'), {
      type: 'RegisterApplication',
      appId: 'app',
      user: 'alice',
    });
    for (const task of ['map-0', 'map-1', 'map-2']) {
      h.ask(task, { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 3, numPartitions: 4 });
    }
    h.advance(10);
    assert.equal(
      h.received(h.master, 'RequestSlots').length,
      0,
      'no RequestSlots before the application is registered',
    );
    h.registerApp();
    const requests = h.received(h.master, 'RequestSlots');
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0]!.partitionIds, [0, 1, 2, 3]);
    assert.equal(requests[0]!.replicate, true);
    assert.equal(requests[0]!.availableTypes, 2);

    h.answer(h.master, 'RequestSlots', () => offer(4, 3, 1));
    h.advance(10);
    const reserves = h.workers.map((w) => h.received(w, 'ReserveSlots'));
    assert.deepEqual(
      reserves.map((r) => r.length),
      [1, 1, 1, 0],
      'one ReserveSlots per worker holding copies; none to the padding worker',
    );
    assert.equal(reserves[0]![0]!.memoryEnabled, false);
    h.reserveAll();
    for (const task of ['map-0', 'map-1', 'map-2']) {
      const response = h.last(h.task(task), 'RegisterShuffleResponse');
      assert.equal(response.status, 'SUCCESS');
      assert.deepEqual(
        response.locations.map((l) => [l.partitionId, l.epoch, l.worker.host, l.peer?.worker.host]),
        [
          [0, 0, 'w0', 'w1'],
          [1, 0, 'w1', 'w2'],
          [2, 0, 'w2', 'w0'],
          [3, 0, 'w0', 'w1'],
        ],
      );
    }
    // A task registering later gets the locations at once.
    h.ask('map-9', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 3, numPartitions: 4 });
    h.advance(10);
    assert.equal(h.last(h.task('map-9'), 'RegisterShuffleResponse').status, 'SUCCESS');
    assert.equal(h.received(h.master, 'RequestSlots').length, 1);
  });

  it('refuses a task that declares a registered shuffle with another shape, and keeps serving the shuffle', () => {
    const h = new Harness();
    h.registered(4, 3);
    h.ask('map-7', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 5, numPartitions: 4 });
    h.advance(10);
    const refused = h.last(h.task('map-7'), 'RegisterShuffleResponse');
    assert.equal(refused.status, 'SHUFFLE_ALREADY_REGISTERED');
    assert.deepEqual(refused.locations, []);
    assert.match(refused.message, /registered with 3 maps and 4 partitions; this task declares 5 maps and 4/);
    h.ask('map-8', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 3, numPartitions: 4 });
    h.advance(10);
    assert.equal(h.last(h.task('map-8'), 'RegisterShuffleResponse').status, 'SUCCESS');
  });

  it('gives every waiting task the master refusal, with its message', () => {
    const h = new Harness({ release: '0.2.0' });
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 1 });
    const refusal = 'server release 0.6.0 refuses client release 0.2.0: upgrade the client';
    h.registerApp('CLIENT_RELEASE_REFUSED', refusal);
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'CLIENT_RELEASE_REFUSED');
    assert.match(response.message, /refuses client release 0\.2\.0/);
    h.ask('map-1', { type: 'RegisterShuffle', appId: 'app', shuffleId: 1, numMappers: 1, numPartitions: 1 });
    h.advance(10);
    assert.equal(h.last(h.task('map-1'), 'RegisterShuffleResponse').status, 'CLIENT_RELEASE_REFUSED');
  });

  it('retries an unanswered registration, then refuses with a clear message', () => {
    const h = new Harness();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 1 });
    h.advance(3 * baseConfig.requestTimeoutMs + 10);
    assert.equal(h.received(h.master, 'RegisterApplication').length, 3);
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'REQUEST_FAILED');
    assert.match(response.message, /did not answer RegisterApplication after 3 tries/);
  });

  it('moves copies off a worker whose reserve fails, onto the padding worker, and releases the orphaned copies', () => {
    const h = new Harness();
    h.registerApp();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 3 });
    h.advance(10);
    h.answer(h.master, 'RequestSlots', () => offer(3, 3, 1));
    h.advance(10);
    h.reserveAll('SUCCESS', (w) => w.id !== workerKey(worker(1)));
    h.reserveAll('RESERVE_SLOTS_FAILED', (w) => w.id === workerKey(worker(1)));
    // w1 held partition 0's replica and partition 1's primary: both pairs move; their copies on w0 and w2 are released.
    const destroyed = h.workers.flatMap((w) =>
      h.received(w, 'DestroySlots').map((m) => [w.id.split(':')[0], m.primaryIds, m.replicaIds]),
    );
    assert.deepEqual(destroyed, [
      ['w0', ['0-0'], []],
      ['w2', [], ['1-0']],
    ]);
    h.reserveAll();
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'SUCCESS');
    for (const location of response.locations) {
      assert.equal(location.epoch, 0, 'a reserve retry keeps the epoch');
      assert.notEqual(location.worker.host, 'w1');
      assert.notEqual(location.peer?.worker.host, 'w1');
      assert.notEqual(location.worker.host, location.peer?.worker.host);
    }
    assert.ok(
      h.lm.state().workers.excluded.has(workerKey(worker(1))),
      'h.lm.state().workers.excluded.has(workerKey(worker(1)))',
    );
  });

  // A rolling upgrade (seed 1057 of upgrade-right-order): the offer's w1 goes away with the reserve unanswered, and
  // w0, back and registered, is still shutting down in the manager's view: replicated, no offered worker is left
  // for w1's copies. The master's current view has room; its new offer must be asked for before failing.
  it('asks the master for a new offer when reserves fail and no offered worker can take their copies', () => {
    const h = new Harness({}, 3);
    h.registerApp();
    const all = [worker(0), worker(1), worker(2)];
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h, { shutting: [worker(0)], available: all });
    h.advance(10);
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 2 });
    h.advance(10);
    // The offer: partition 0 on w1/w2, partition 1 on w2/w1 (w0 shutting down), no padding.
    h.answer(h.master, 'RequestSlots', () => {
      const two = offer(2, 2, 0);
      const rename = (id: WorkerId): WorkerId => ({ ...id, host: id.host === 'w0' ? 'w2' : id.host });
      return JSON.parse(JSON.stringify(two), (key, value: unknown) =>
        key === 'worker' ? rename(value as WorkerId) : value,
      ) as RequestSlotsResponse;
    });
    h.advance(10);
    h.reserveAll('SUCCESS', (w) => w.id === workerKey(worker(2)));
    h.reserveAll('RESERVE_SLOTS_FAILED', (w) => w.id === workerKey(worker(1)));
    assert.equal(
      h.received(h.task('map-0'), 'RegisterShuffleResponse').length,
      0,
      'not failed on the stale view',
    );
    assert.equal(h.received(h.master, 'RequestSlots').length, 2, 'a second offer asked for');
    h.answer(h.master, 'RequestSlots', () => offer(2, 3, 0));
    h.advance(10);
    h.reserveAll();
    assert.equal(h.last(h.task('map-0'), 'RegisterShuffleResponse').status, 'SUCCESS');
  });

  it('fails the registration with RESERVE_SLOTS_FAILED when the retries run out, and releases what was reserved', () => {
    const h = new Harness({ reserveMaxRetries: 0 });
    h.registerApp();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 2 });
    h.advance(10);
    h.answer(h.master, 'RequestSlots', () => offer(2, 2, 0, false));
    h.advance(10);
    h.reserveAll('SUCCESS', (w) => w.id === workerKey(worker(0)));
    h.reserveAll('RESERVE_SLOTS_FAILED', (w) => w.id === workerKey(worker(1)));
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'RESERVE_SLOTS_FAILED');
    assert.match(response.message, /partition 1: reserve failed on w1/);
    assert.deepEqual(h.last(h.workers[0]!, 'DestroySlots').primaryIds, ['0-0']);
    assert.equal(
      h.lm.state().shuffles.size,
      0,
      'a failed registration is forgotten so that a retried task starts afresh',
    );
  });

  it('places partitions the master left unplaced on the offered workers, or names them', () => {
    const h = new Harness({ replicate: false });
    h.registerApp();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 3 });
    h.advance(10);
    const partial = offer(2, 2, 1, false);
    h.answer(h.master, 'RequestSlots', () => ({
      ...partial,
      status: 'PARTIALLY_PLACED',
      unplaced: [{ partitionId: 2, reason: 'no-capacity' }],
    }));
    h.advance(10);
    h.reserveAll();
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'SUCCESS');
    assert.deepEqual(
      response.locations.map((l) => l.partitionId),
      [0, 1, 2],
    );
  });

  it('asks again once when the master places nothing, then surfaces its answer', () => {
    const h = new Harness();
    h.registerApp();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 2 });
    h.advance(10);
    const none = (): RequestSlotsResponse => ({
      type: 'RequestSlotsResponse',
      status: 'SLOT_NOT_AVAILABLE',
      workerResource: [],
      unplaced: [],
      message: 'no worker has a healthy disk',
    });
    h.answer(h.master, 'RequestSlots', none);
    h.advance(10);
    h.answer(h.master, 'RequestSlots', none);
    h.advance(10);
    assert.equal(h.received(h.master, 'RequestSlots').length, 2);
    const response = h.last(h.task('map-0'), 'RegisterShuffleResponse');
    assert.equal(response.status, 'SLOT_NOT_AVAILABLE');
    assert.match(response.message, /no worker has a healthy disk/);
  });
});

/** Map `mapId`'s revive of partition `partitionId`, whose location `old` failed with `cause`. */
const revive = (mapId: number, partitionId: number, old: PartitionLocation, cause: StatusCode): Message => ({
  type: 'Revive',
  appId: 'app',
  shuffleId: 0,
  mapId,
  attemptId: 0,
  requests: [{ partitionId, epoch: old.epoch, oldLocation: old, cause }],
});

describe('lifecycle manager: revive', () => {
  it('collapses concurrent revives of a partition into one new location at epoch + 1, off the excluded worker', () => {
    const h = new Harness();
    const registered = h.registered(2, 3);
    const old = registered.locations[0]!;
    const before = h.workers.map((w) => h.received(w, 'ReserveSlots').length);
    h.ask('map-0', revive(0, 0, old, 'PUSH_DATA_WRITE_FAIL_PRIMARY'), 5);
    h.ask('map-1', revive(1, 0, old, 'PUSH_DATA_TIMEOUT_PRIMARY'), 5);
    h.advance(150);
    const reserves = h.workers.flatMap((w, i) => h.received(w, 'ReserveSlots').slice(before[i]));
    assert.equal(reserves.flatMap((r) => r.primaries).length, 1, 'one new primary for two revives');
    h.reserveAll();
    const answers = ['map-0', 'map-1'].map((t) => h.last(h.task(t), 'ReviveResponse'));
    for (const answer of answers) {
      assert.equal(answer.results[0]!.status, 'SUCCESS');
      assert.equal(answer.results[0]!.newLocation?.epoch, 1);
      assert.notEqual(answer.results[0]!.newLocation?.worker.host, old.worker.host);
      assert.equal(answer.results[0]!.oldAvailable, false);
    }
    assert.deepEqual(answers[0]!.results[0]!.newLocation, answers[1]!.results[0]!.newLocation);
    // A revive about the old epoch now gets the new location at once.
    h.ask('map-2', revive(2, 0, old, 'HARD_SPLIT'), 5);
    h.advance(10);
    assert.equal(h.last(h.task('map-2'), 'ReviveResponse').results[0]!.newLocation?.epoch, 1);
  });

  it('excludes a worker once per broken copy, so that a partition whose only other candidate it is can be revived', () => {
    const h = new Harness({}, 2);
    const old = h.registered(1, 3, 2, 0).locations[0]!;
    h.ask('map-0', revive(0, 0, old, 'PUSH_DATA_WRITE_FAIL_PRIMARY'), 5);
    h.advance(150);
    // Short of workers, the revive asks the master for a fresh report first; the master excludes the worker too.
    answerHeartbeat(h, { excluded: [old.worker] });
    h.advance(10);
    const first = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(first.status, 'SLOT_NOT_AVAILABLE', 'replication needs two workers and one is excluded');
    // The master no longer lists the worker: the exclusion (not a lasting cause) ends with its next report.
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h);
    h.advance(10);
    assert.equal(h.lm.state().workers.excluded.size, 0);
    // A retried map pushes to the same broken copy: no new evidence, so no new exclusion, and the revive succeeds.
    h.ask('map-1', revive(1, 0, old, 'PUSH_DATA_WRITE_FAIL_PRIMARY'), 5);
    h.advance(150);
    h.reserveAll();
    const second = h.last(h.task('map-1'), 'ReviveResponse').results[0]!;
    assert.equal(second.status, 'SUCCESS', 'revived');
    // Epoch 1 went to the failed revive: an epoch handed out is never handed out again (core/revive/book.ts).
    assert.equal(second.newLocation?.epoch, 2);
  });

  it('revives onto a worker the master reports available although the shuffle was never offered it', () => {
    const h = new Harness({}, 3);
    // The shuffle's slots name w0 and w1 only; the master's heartbeat answer lists w2 as well.
    const old = h.registered(1, 3, 2, 0).locations[0]!;
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h, { available: [worker(0), worker(1), worker(2)] });
    h.advance(10);
    h.ask('map-0', revive(0, 0, old, 'PUSH_DATA_WRITE_FAIL_PRIMARY'), 5);
    h.advance(150);
    h.reserveAll();
    const result = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(result.status, 'SUCCESS', 'two healthy workers are known: w1 and w2');
    const placed = [result.newLocation!.worker.host, result.newLocation!.peer!.worker.host].sort();
    assert.deepEqual(placed, ['w1', 'w2']);
  });

  it("charges a replica's failure to the replica's worker, never to its primary's", () => {
    const h = new Harness({}, 3);
    const old = h.registered(1, 3, 3, 0).locations[0]!;
    assert.ok(old.peer, 'replicated');
    h.ask('map-0', revive(0, 0, old, 'PUSH_DATA_CONNECTION_EXCEPTION_REPLICA'), 5);
    h.advance(150);
    h.reserveAll();
    assert.deepEqual([...h.lm.state().workers.excluded.keys()], [workerKey(old.peer.worker)]);
    const result = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(result.status, 'SUCCESS', 'the primary and the third worker take the pair');
  });

  it('keeps a revived replica off the rack of its primary, using the racks the master reported', () => {
    const h = new Harness();
    const registered = h.registered(6, 6);
    const rackOf = (id: WorkerId) => `/rack-${Number(id.host.slice(1)) % 2}`;
    registered.locations.forEach((old, p) =>
      h.ask(`map-${p}`, revive(p, old.partitionId, old, 'HARD_SPLIT'), 5),
    );
    h.advance(150);
    h.reserveAll();
    registered.locations.forEach((_old, p) => {
      const revived = h.last(h.task(`map-${p}`), 'ReviveResponse').results[0]!.newLocation;
      assert.ok(revived?.peer, `partition ${p} was revived as a replicated pair`);
      assert.notEqual(
        rackOf(revived.worker),
        rackOf(revived.peer.worker),
        `partition ${p}: primary and replica racks`,
      );
    });
  });

  it('revived storage follows the client release (contract rules 3 and 4)', () => {
    for (const [release, type, mask] of [
      ['0.5.1', 'MEMORY', 0],
      ['0.6.0', 'HDD', 2],
    ] as const) {
      const h = new Harness({ release });
      const old = h.registered(1, 1).locations[0]!;
      h.ask('map-0', revive(0, 0, old, 'SOFT_SPLIT'), 5);
      h.advance(150);
      h.reserveAll();
      const location = h.last(h.task('map-0'), 'ReviveResponse').results[0]!.newLocation!;
      assert.equal(location.storage.type, type, release);
      assert.equal(location.storage.availableTypes, mask, release);
    }
  });

  it('answers STAGE_ENDED once the stage has ended, and MAP_ENDED with the map listed once the map has', () => {
    const h = new Harness();
    const old = h.registered(1, 2).locations[0]!;
    h.ask('map-0', {
      type: 'MapperEnd',
      appId: 'app',
      shuffleId: 0,
      mapId: 0,
      attemptId: 0,
      numMappers: 2,
      written: [],
    });
    h.advance(10);
    h.ask('map-0', revive(0, 0, old, 'HARD_SPLIT'), 6);
    h.advance(10);
    const mapEnded = h.last(h.task('map-0'), 'ReviveResponse');
    assert.deepEqual(mapEnded.endedMapIds, [0]);
    assert.equal(mapEnded.results[0]!.status, 'MAP_ENDED');

    h.ask('map-1', revive(1, 0, old, 'HARD_SPLIT'), 7);
    h.ask(
      'map-1',
      { type: 'MapperEnd', appId: 'app', shuffleId: 0, mapId: 1, attemptId: 0, numMappers: 2, written: [] },
      8,
    );
    h.advance(150);
    assert.equal(h.last(h.task('map-1'), 'ReviveResponse').results[0]!.status, 'STAGE_ENDED');
  });

  it('property: revived locations never use an excluded worker and their epochs only grow', () => {
    const causes: StatusCode[] = [
      'PUSH_DATA_WRITE_FAIL_PRIMARY',
      'PUSH_DATA_WRITE_FAIL_REPLICA',
      'PUSH_DATA_TIMEOUT_PRIMARY',
      'PUSH_DATA_CONNECTION_EXCEPTION_REPLICA',
      'HARD_SPLIT',
      'SOFT_SPLIT',
    ];
    fc.assert(
      fc.property(
        fc.array(fc.record({ partition: fc.nat(3), cause: fc.constantFrom(...causes) }), {
          minLength: 1,
          maxLength: 6,
        }),
        (revives) => {
          const h = new Harness({ reserveMaxRetries: 0 }, 8);
          const latest = new Map(h.registered(4, 9, 4, 4).locations.map((l) => [l.partitionId, l]));
          let requestId = 10;
          for (const { partition, cause } of revives) {
            const old = latest.get(partition)!;
            const task = `map-${requestId}`;
            h.ask(task, revive(0, partition, old, cause), requestId);
            requestId += 1;
            h.advance(150);
            h.reserveAll();
            const result = h.last(h.task(task), 'ReviveResponse').results[0]!;
            const excluded = h.lm.state().workers.excluded;
            if (result.status !== 'SUCCESS') {
              assert.equal(result.status, 'SLOT_NOT_AVAILABLE');
              continue;
            }
            const fresh = result.newLocation!;
            assert.ok(fresh.epoch > old.epoch, 'fresh.epoch > old.epoch');
            assert.ok(!excluded.has(workerKey(fresh.worker)), '!excluded.has(workerKey(fresh.worker))');
            assert.ok(
              !excluded.has(workerKey(fresh.peer!.worker)),
              '!excluded.has(workerKey(fresh.peer!.worker))',
            );
            assert.notEqual(workerKey(fresh.worker), workerKey(fresh.peer!.worker));
            latest.set(partition, fresh);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('lifecycle manager: mapper end, commit and file groups', () => {
  const mapperEnd = (
    mapId: number,
    attemptId: number,
    written: { partitionId: number; batches: number; bytes: number }[],
  ): Message => ({
    type: 'MapperEnd',
    appId: 'app',
    shuffleId: 0,
    mapId,
    attemptId,
    numMappers: 2,
    written,
  });

  function commitAll(h: Harness, failIds: ReadonlySet<string> = new Set()): void {
    for (const w of h.workers) {
      h.answer(w, 'CommitFiles', ({ message }) => {
        const file = (uniqueId: string, mode: 'PRIMARY' | 'REPLICA') => ({
          uniqueId,
          mode,
          storage: { type: 'HDD' as const, mountPoint: '/d1', availableTypes: 2 },
          bytes: 10,
          chunkOffsets: [0, 10],
        });
        const ok = (id: string, mode: string) => !failIds.has(`${w.id.split(':')[0]}/${id}/${mode}`);
        return {
          type: 'CommitFilesResponse',
          status: 'SUCCESS',
          committedPrimaries: message.primaryIds
            .filter((id) => ok(id, 'PRIMARY'))
            .map((id) => file(id, 'PRIMARY')),
          committedReplicas: message.replicaIds
            .filter((id) => ok(id, 'REPLICA'))
            .map((id) => file(id, 'REPLICA')),
          failedPrimaryIds: message.primaryIds.filter((id) => !ok(id, 'PRIMARY')),
          failedReplicaIds: message.replicaIds.filter((id) => !ok(id, 'REPLICA')),
          message: '',
        };
      });
    }
    h.advance(10);
  }

  it('makes the first attempt to end the winner, commits every copy, and answers parked reducers', () => {
    const h = new Harness();
    h.registered(2, 2);
    h.ask('reduce-0', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 3);
    h.ask('map-0-1', mapperEnd(0, 1, [{ partitionId: 0, batches: 2, bytes: 20 }]), 4);
    h.ask('map-0-0', mapperEnd(0, 0, [{ partitionId: 0, batches: 9, bytes: 90 }]), 4);
    h.advance(10);
    assert.equal(h.last(h.task('map-0-1'), 'StatusResponse').status, 'SUCCESS');
    const loser = h.last(h.task('map-0-0'), 'StatusResponse');
    assert.equal(loser.status, 'MAP_ENDED');
    assert.match(loser.message, /attempt 1 of map 0 ended first/);
    assert.equal(
      h.workers.flatMap((w) => h.received(w, 'CommitFiles')).length,
      0,
      'no commit before every map ended',
    );

    h.ask('map-1-0', mapperEnd(1, 0, [{ partitionId: 1, batches: 1, bytes: 5 }]), 4);
    h.advance(10);
    const commits = h.workers.flatMap((w) => h.received(w, 'CommitFiles'));
    assert.equal(commits.length, 3);
    for (const commit of commits) assert.deepEqual(commit.mapAttempts, [1, 0]);
    assert.deepEqual(
      commits.map((c) => [c.primaryIds, c.replicaIds]),
      [
        [['0-0'], []],
        [['1-0'], ['0-0']],
        [[], ['1-0']],
      ],
    );
    commitAll(h);
    const group = h.last(h.task('reduce-0'), 'GetReducerFileGroupResponse');
    assert.equal(group.status, 'SUCCESS');
    assert.deepEqual(group.mapAttempts, [1, 0]);
    assert.deepEqual(group.fileGroups[0]!.expected, [{ mapId: 0, partitionId: 0, batches: 2, bytes: 20 }]);
    assert.deepEqual(
      group.fileGroups[0]!.locations.map((l) => [l.mode, l.worker.host]),
      [
        ['PRIMARY', 'w0'],
        ['REPLICA', 'w1'],
      ],
    );
    assert.equal(group.fileGroups[0]!.files.length, 2);
    // A repeated MapperEnd of the winner is answered SUCCESS again (its first answer may have been lost).
    h.ask('map-0-1', mapperEnd(0, 1, []), 9);
    h.advance(10);
    assert.equal(h.last(h.task('map-0-1'), 'StatusResponse').status, 'SUCCESS');
  });

  it("lists a revived partition's committed copies epoch by epoch, and judges each epoch on its own", () => {
    for (const lostEpoch of [false, true]) {
      const h = new Harness();
      const registered = h.registered(2, 1);
      const old = registered.locations.find((l) => l.partitionId === 0)!;
      h.ask('map-0', revive(0, 0, old, 'HARD_SPLIT'), 5);
      h.advance(150);
      h.reserveAll();
      const revived = h.last(h.task('map-0'), 'ReviveResponse').results[0]!.newLocation!;
      assert.equal(revived.epoch, 1);
      h.ask('map-0', { ...mapperEnd(0, 0, []), numMappers: 1 } as Message, 6);
      h.advance(10);
      // Epoch 1's replica fails its commit; with `lostEpoch` its primary too, so no copy of that epoch is left.
      const failing = new Set([`${revived.peer!.worker.host}/0-1/REPLICA`]);
      if (lostEpoch) failing.add(`${revived.worker.host}/0-1/PRIMARY`);
      commitAll(h, failing);
      h.ask('reduce-0', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 3);
      h.advance(10);
      const group = h.last(h.task('reduce-0'), 'GetReducerFileGroupResponse');
      if (lostEpoch) {
        assert.equal(group.status, 'SHUFFLE_DATA_LOST');
        assert.match(group.message, /partition 0 epoch 1 \(PRIMARY on w\d+:[^;]*; REPLICA on /);
        assert.doesNotMatch(group.message, /epoch 0/);
        continue;
      }
      assert.equal(group.status, 'SUCCESS');
      const first = group.fileGroups[0]!;
      assert.deepEqual(
        first.locations.map((l) => [l.epoch, l.mode]),
        [
          [0, 'PRIMARY'],
          [0, 'REPLICA'],
          [1, 'PRIMARY'],
        ],
      );
      assert.deepEqual(
        first.files.map((f) => [f.uniqueId, f.mode]),
        [
          ['0-0', 'PRIMARY'],
          ['0-0', 'REPLICA'],
          ['0-1', 'PRIMARY'],
        ],
      );
      assert.equal(group.fileGroups[1]!.locations.length, 2, 'partition 1: its primary and replica');
    }
  });

  it('reports SHUFFLE_DATA_LOST when no copy of a location commits, and keeps a location with one copy', () => {
    const h = new Harness();
    h.registered(2, 1);
    h.ask('map-0', { ...mapperEnd(0, 0, []), numMappers: 1 } as Message, 4);
    h.advance(10);
    commitAll(h, new Set(['w0/0-0/PRIMARY', 'w1/0-0/REPLICA', 'w1/1-0/PRIMARY']));
    h.ask('reduce-0', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 3);
    h.advance(10);
    const group = h.last(h.task('reduce-0'), 'GetReducerFileGroupResponse');
    assert.equal(group.status, 'SHUFFLE_DATA_LOST');
    assert.match(group.message, /partition 0 epoch 0/);
    assert.doesNotMatch(group.message, /partition 1/);
  });

  it('answers a parked reducer STAGE_END_TIMEOUT after the wait, and an unknown shuffle SHUFFLE_UNREGISTERED', () => {
    const h = new Harness();
    h.registered(1, 2);
    h.ask('reduce-0', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 3);
    h.advance(baseConfig.fileGroupWaitMs + 10);
    const timeout = h.last(h.task('reduce-0'), 'GetReducerFileGroupResponse');
    assert.equal(timeout.status, 'STAGE_END_TIMEOUT');
    assert.match(timeout.message, /0 of 2 maps ended/);
    assert.match(timeout.message, /waiting for maps 0, 1/);
    h.ask('reduce-1', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 7 }, 3);
    h.advance(10);
    assert.equal(h.last(h.task('reduce-1'), 'GetReducerFileGroupResponse').status, 'SHUFFLE_UNREGISTERED');
  });

  it('sends heartbeats with committed bytes and its placed shuffles, and avoids the workers the master reports', () => {
    const h = new Harness();
    h.registered(2, 1);
    h.ask('map-0', { ...mapperEnd(0, 0, []), numMappers: 1 } as Message, 4);
    h.advance(10);
    commitAll(h);
    h.advance(baseConfig.heartbeatIntervalMs);
    const heartbeat = h.last(h.master, 'ApplicationHeartbeat');
    assert.deepEqual(heartbeat, {
      type: 'ApplicationHeartbeat',
      appId: 'app',
      bytesWritten: 20,
      fileCount: 2,
      // Placed shuffles, so that a master that lost its state takes them back.
      shuffleIds: [0],
    });
    answerHeartbeat(h, { excluded: [worker(2)], shutting: [worker(3)] });
    h.advance(10);
    assert.ok(
      h.lm.state().workers.excluded.has(workerKey(worker(2))),
      'h.lm.state().workers.excluded.has(workerKey(worker(2)))',
    );
    assert.ok(
      h.lm.state().workers.shuttingDown.has(workerKey(worker(3))),
      'h.lm.state().workers.shuttingDown.has(workerKey(worker(3)))',
    );
  });
});

describe('lifecycle manager: odd requests', () => {
  it('answers a revive of a partition the shuffle does not have with PARTITION_NOT_FOUND', () => {
    const h = new Harness();
    const old = h.registered(2, 1).locations[0]!;
    h.ask(
      'map-0',
      {
        type: 'Revive',
        appId: 'app',
        shuffleId: 0,
        mapId: 0,
        attemptId: 0,
        requests: [
          { partitionId: 5, epoch: 0, cause: 'HARD_SPLIT' },
          { partitionId: 0, epoch: 0, oldLocation: old, cause: 'HARD_SPLIT' },
        ],
      },
      5,
    );
    h.advance(150);
    h.reserveAll();
    const response = h.last(h.task('map-0'), 'ReviveResponse');
    assert.deepEqual(
      response.results.map((r) => [r.partitionId, r.status]),
      [
        [5, 'PARTITION_NOT_FOUND'],
        [0, 'SUCCESS'],
      ],
    );
  });

  it('answers MapperEnd and revives of an unknown shuffle SHUFFLE_UNREGISTERED', () => {
    const h = new Harness();
    h.registerApp();
    h.ask('map-0', {
      type: 'MapperEnd',
      appId: 'app',
      shuffleId: 3,
      mapId: 0,
      attemptId: 0,
      numMappers: 1,
      written: [],
    });
    h.ask('map-1', {
      type: 'Revive',
      appId: 'app',
      shuffleId: 3,
      mapId: 0,
      attemptId: 0,
      requests: [{ partitionId: 0, epoch: 0, cause: 'HARD_SPLIT' }],
    });
    h.advance(10);
    assert.equal(h.last(h.task('map-0'), 'StatusResponse').status, 'SHUFFLE_UNREGISTERED');
    assert.equal(h.last(h.task('map-1'), 'ReviveResponse').results[0]!.status, 'SHUFFLE_UNREGISTERED');
  });
});

describe('lifecycle manager: worker exclusions', () => {
  const revive = (mapId: number, old: PartitionLocation, cause: StatusCode): Message => ({
    type: 'Revive',
    appId: 'app',
    shuffleId: 0,
    mapId,
    attemptId: 0,
    requests: [{ partitionId: old.partitionId, epoch: old.epoch, oldLocation: old, cause }],
  });

  it('lets a lasting exclusion expire after the timeout even when no heartbeat is answered', () => {
    const h = new Harness();
    const old = h.registered(2, 3, 2, 0).locations[0]!;
    h.ask('map-0', revive(0, old, 'PUSH_DATA_TIMEOUT_PRIMARY'), 5);
    h.advance(150);
    // Two workers, one excluded, replication on: nowhere to go, and the fresh report it asks for never comes.
    h.advance(baseConfig.requestTimeoutMs);
    const failed = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(failed.status, 'SLOT_NOT_AVAILABLE');
    // The master is silent from now on: only the expiry can bring the worker back.
    h.advance(baseConfig.excludedWorkerExpireMs);
    h.ask('map-1', revive(1, old, 'HARD_SPLIT'), 6);
    h.advance(150);
    h.reserveAll();
    const result = h.last(h.task('map-1'), 'ReviveResponse').results[0]!;
    assert.equal(result.status, 'SUCCESS');
    // Epoch 1 went to the failed revive: an epoch handed out is never handed out again (core/revive/book.ts).
    assert.equal(result.newLocation?.epoch, 2);
  });

  // A rolling upgrade (issue 26): w0 restarted and registered again while the manager's last report still lists it
  // as shutting down, and w1 has begun its own graceful shutdown. Replicated, the stale view leaves one worker.
  it('holds a revive short of workers for one fresh master report, which lets a restarted worker take it', () => {
    const h = new Harness({}, 3);
    const all = [worker(0), worker(1), worker(2)];
    const old = h.registered(1, 3, 3, 0).locations[0]!;
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h, { shutting: [worker(0), worker(1)], available: all });
    h.advance(10);
    const heartbeats = h.received(h.master, 'ApplicationHeartbeat').length;
    h.ask('map-0', revive(0, old, 'HARD_SPLIT'), 5);
    h.advance(150);
    assert.equal(
      h.received(h.master, 'ApplicationHeartbeat').length,
      heartbeats + 1,
      'a heartbeat out of turn',
    );
    assert.equal(h.received(h.task('map-0'), 'ReviveResponse').length, 0, 'no answer on the stale view');
    answerHeartbeat(h, { shutting: [worker(1)], available: all });
    h.advance(10);
    h.reserveAll();
    const result = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(result.status, 'SUCCESS');
    const placed = [result.newLocation!.worker.host, result.newLocation!.peer!.worker.host].sort();
    assert.deepEqual(placed, ['w0', 'w2'], 'never the worker still shutting down');
  });

  it('fails a revive still short of workers after the fresh report, asking only once', () => {
    const h = new Harness({}, 3);
    const all = [worker(0), worker(1), worker(2)];
    const old = h.registered(1, 3, 3, 0).locations[0]!;
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h, { shutting: [worker(0), worker(1)], available: all });
    h.advance(10);
    const heartbeats = h.received(h.master, 'ApplicationHeartbeat').length;
    h.ask('map-0', revive(0, old, 'HARD_SPLIT'), 5);
    h.advance(150);
    answerHeartbeat(h, { shutting: [worker(0), worker(1)], available: all });
    h.advance(150);
    const result = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
    assert.equal(result.status, 'SLOT_NOT_AVAILABLE');
    assert.equal(h.received(h.master, 'ApplicationHeartbeat').length, heartbeats + 1, 'one report asked for');
  });

  // A rolling upgrade (upgrade seed 382781): pushes to w0 failed while it restarted, so the manager excluded it
  // itself for a lasting cause; w0 registered again, and w1 began its own graceful shutdown.
  it('gives a worker it excluded itself a second chance when the fresh report lists it and the revive is short', () => {
    for (const listed of [true, false]) {
      const h = new Harness({}, 3);
      const all = [worker(0), worker(1), worker(2)];
      const locations = h.registered(3, 3, 3, 0).locations;
      const onW0 = locations.find((location) => location.worker.host === 'w0')!;
      const other = locations.find((location) => location.partitionId !== onW0.partitionId)!;
      h.ask('map-0', revive(0, onW0, 'PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY'), 5);
      h.advance(150);
      h.reserveAll();
      assert.equal(h.last(h.task('map-0'), 'ReviveResponse').results[0]!.status, 'SUCCESS');
      assert.ok(h.lm.state().workers.excluded.has(workerKey(worker(0))), 'w0 excluded for a lasting cause');
      h.advance(baseConfig.heartbeatIntervalMs);
      answerHeartbeat(h, { shutting: [worker(1)], available: [worker(1), worker(2)] });
      h.advance(10);
      h.ask('map-1', revive(1, other, 'HARD_SPLIT'), 6);
      h.advance(150);
      answerHeartbeat(h, { shutting: [worker(1)], available: listed ? all : [worker(1), worker(2)] });
      h.advance(10);
      h.reserveAll();
      const result = h.last(h.task('map-1'), 'ReviveResponse').results[0]!;
      if (!listed) {
        assert.equal(result.status, 'SLOT_NOT_AVAILABLE', 'not without the master vouching for it');
        continue;
      }
      assert.equal(result.status, 'SUCCESS', 'the worker the master lists again takes the revive');
      const placed = [result.newLocation!.worker.host, result.newLocation!.peer!.worker.host].sort();
      assert.deepEqual(placed, ['w0', 'w2']);
      assert.ok(
        h.lm.state().workers.excluded.has(workerKey(worker(0))),
        'the exclusion stays until it expires',
      );
    }
  });

  it('revives exactly when the fresh report leaves enough workers, whatever the stale view (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        (workers, staleFlags, freshFlags) => {
          const h = new Harness({}, workers);
          const all = Array.from({ length: workers }, (_, i) => worker(i));
          const old = h.registered(1, 3, workers, 0).locations[0]!;
          const stale = all.filter((_, i) => staleFlags[i]);
          const fresh = all.filter((_, i) => freshFlags[i]);
          h.advance(baseConfig.heartbeatIntervalMs);
          answerHeartbeat(h, { shutting: stale, available: all });
          h.advance(10);
          const heartbeats = h.received(h.master, 'ApplicationHeartbeat').length;
          h.ask('map-0', revive(0, old, 'HARD_SPLIT'), 5);
          h.advance(150);
          const staleEnough = workers - stale.length >= 2;
          answerHeartbeat(h, { shutting: fresh, available: all });
          h.advance(150);
          h.reserveAll();
          const result = h.last(h.task('map-0'), 'ReviveResponse').results[0]!;
          const expected = staleEnough || workers - fresh.length >= 2 ? 'SUCCESS' : 'SLOT_NOT_AVAILABLE';
          assert.equal(result.status, expected);
          const asked = h.received(h.master, 'ApplicationHeartbeat').length - heartbeats;
          assert.equal(asked, staleEnough ? 0 : 1, 'a report is asked for only when short, and once');
          if (result.status === 'SUCCESS') {
            const avoided = staleEnough ? stale : fresh;
            for (const copy of [result.newLocation!, result.newLocation!.peer!])
              assert.ok(!avoided.some((w) => w.host === copy.worker.host), `${copy.worker.host} shuts down`);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('treats a reserve refused for shutdown as shutting down, which the master report then clears', () => {
    const h = new Harness();
    h.registerApp();
    h.ask('map-0', { type: 'RegisterShuffle', appId: 'app', shuffleId: 0, numMappers: 1, numPartitions: 2 });
    h.advance(10);
    h.answer(h.master, 'RequestSlots', () => offer(2, 3, 1));
    h.advance(10);
    h.reserveAll('WORKER_SHUTDOWN', (w) => w === h.workers[0]);
    h.reserveAll('SUCCESS', (w) => w !== h.workers[0]);
    const key = workerKey(worker(0));
    assert.ok(h.lm.state().workers.shuttingDown.has(key), 'h.lm.state().workers.shuttingDown.has(key)');
    assert.equal(h.lm.state().workers.excluded.has(key), false, 'no lasting exclusion for a shutdown');
    h.advance(baseConfig.heartbeatIntervalMs);
    answerHeartbeat(h);
    h.advance(10);
    assert.equal(h.lm.state().workers.shuttingDown.has(key), false);
  });

  for (const filter of [false, true]) {
    it(`names its own excluded workers in RequestSlots only when filterExcludedWorkers is ${filter}`, () => {
      const h = new Harness({ filterExcludedWorkers: filter });
      const old = h.registered(2, 3).locations[0]!;
      h.ask('map-0', revive(0, old, 'PUSH_DATA_TIMEOUT_PRIMARY'), 5);
      h.advance(150);
      h.ask('map-9', {
        type: 'RegisterShuffle',
        appId: 'app',
        shuffleId: 1,
        numMappers: 1,
        numPartitions: 1,
      });
      h.advance(10);
      const request = h.last(h.master, 'RequestSlots');
      assert.equal(request.shuffleId, 1);
      assert.deepEqual(request.excludedWorkers, filter ? [workerKey(old.worker)] : []);
    });
  }
});

describe('lifecycle manager: unregister', () => {
  const DRIVER = 'driver-app';
  const unregisterShuffle = (shuffleId: number): Message => ({
    type: 'UnregisterShuffle',
    appId: 'app',
    shuffleId,
  });
  const unregisterApp: Message = { type: 'UnregisterApplication', appId: 'app' };
  const register = (shuffleId: number): Message => ({
    type: 'RegisterShuffle',
    appId: 'app',
    shuffleId,
    numMappers: 2,
    numPartitions: 2,
  });

  it('forgets a committed shuffle, tells the master, and refuses to register it again', () => {
    const h = new Harness();
    h.registered(2, 1);
    h.ask('map-0', {
      type: 'MapperEnd',
      appId: 'app',
      shuffleId: 0,
      mapId: 0,
      attemptId: 0,
      numMappers: 1,
      written: [],
    });
    h.advance(10);
    assert.equal(h.lm.state().shuffles.get(0)?.phase, 'committing');
    h.ask(DRIVER, unregisterShuffle(0), 1);
    h.advance(10);
    const answer = h.last(h.task(DRIVER), 'StatusResponse');
    assert.equal(answer.status, 'SUCCESS');
    assert.deepEqual(h.last(h.master, 'UnregisterShuffle'), unregisterShuffle(0));
    assert.equal(h.lm.state().shuffles.size, 0);
    assert.deepEqual(
      [...h.lm.state().requests.open.values()].map((r) => r.purpose.kind),
      ['unregisterShuffle'],
      'the commits in flight are dropped; only the unregister is awaited',
    );
    // Late commit answers are stale and change nothing.
    for (const w of h.workers) {
      h.answer(w, 'CommitFiles', () => ({
        type: 'CommitFilesResponse',
        status: 'SUCCESS',
        committedPrimaries: [],
        committedReplicas: [],
        failedPrimaryIds: [],
        failedReplicaIds: [],
        message: '',
      }));
    }
    h.advance(10);
    assert.equal(h.lm.state().shuffles.size, 0);

    h.ask('reduce-0', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 2);
    h.ask('map-late', register(0), 3);
    h.advance(10);
    const group = h.last(h.task('reduce-0'), 'GetReducerFileGroupResponse');
    assert.equal(group.status, 'SHUFFLE_UNREGISTERED');
    assert.match(group.message, /unregistered by the driver/);
    const late = h.last(h.task('map-late'), 'RegisterShuffleResponse');
    assert.equal(late.status, 'SHUFFLE_UNREGISTERED');
    assert.match(late.message, /never registered again/);
    assert.equal(h.received(h.master, 'RequestSlots').length, 1, 'no slots booked again for a dead shuffle');
  });

  it('answers every task still waiting on the shuffle with SHUFFLE_UNREGISTERED', () => {
    const h = new Harness();
    const old = h.registered(2, 2).locations[0]!;
    h.ask(
      'map-1',
      {
        type: 'Revive',
        appId: 'app',
        shuffleId: 0,
        mapId: 1,
        attemptId: 0,
        requests: [{ partitionId: 0, epoch: 0, oldLocation: old, cause: 'HARD_SPLIT' }],
      },
      4,
    );
    h.ask('reduce-1', { type: 'GetReducerFileGroup', appId: 'app', shuffleId: 0 }, 5);
    h.advance(150); // the revive is being reserved; the reducer is parked
    assert.equal(h.lm.state().reservations.size, 1);
    h.ask(DRIVER, unregisterShuffle(0), 1);
    h.advance(10);
    const revive = h.last(h.task('map-1'), 'ReviveResponse');
    assert.deepEqual(
      revive.results.map((r) => r.status),
      ['SHUFFLE_UNREGISTERED'],
    );
    assert.equal(h.last(h.task('reduce-1'), 'GetReducerFileGroupResponse').status, 'SHUFFLE_UNREGISTERED');
    const state = h.lm.state();
    assert.equal(state.reservations.size, 0);
    assert.equal(state.reviveCalls.size, 0);
    assert.equal(state.parkedFileGroups.size, 0);
    // The parked reducer's wait timer was cancelled: no second answer later.
    h.advance(baseConfig.fileGroupWaitMs + 10);
    assert.equal(h.received(h.task('reduce-1'), 'GetReducerFileGroupResponse').length, 1);
  });

  it('retries an unconfirmed unregister a bounded number of times, then logs what it means', () => {
    const h = new Harness();
    h.registered(1, 1);
    h.ask(DRIVER, unregisterShuffle(0), 1);
    h.advance(10 * baseConfig.requestTimeoutMs);
    assert.equal(h.received(h.master, 'UnregisterShuffle').length, baseConfig.maxRequestAttempts);
    const warning = h.cluster.logs.find((l) => l.event === 'the master did not confirm the unregister');
    assert.ok(warning, 'the give-up is logged');
    assert.match(String(warning.fields?.consequence), /until the application is unregistered or expires/);
    assert.deepEqual(
      [...h.lm.state().requests.open.values()].filter((r) => r.purpose.kind !== 'heartbeat'),
      [],
    );
  });

  it('forwards an unregister even for a shuffle whose registration failed after the master registered it', () => {
    const h = new Harness({ reserveMaxRetries: 0 });
    h.registerApp();
    h.ask('map-0', register(3));
    h.advance(10);
    h.answer(h.master, 'RequestSlots', () => offer(2, 2, 0, false));
    h.advance(10);
    h.reserveAll('RESERVE_SLOTS_FAILED');
    assert.equal(h.last(h.task('map-0'), 'RegisterShuffleResponse').status, 'RESERVE_SLOTS_FAILED');
    h.ask(DRIVER, unregisterShuffle(3), 1);
    h.advance(10);
    assert.deepEqual(h.last(h.master, 'UnregisterShuffle'), unregisterShuffle(3));
  });

  it('ends the application: unregisters at the master, stops heartbeating, refuses new shuffles', () => {
    const h = new Harness();
    h.registered(2, 1);
    h.advance(baseConfig.heartbeatIntervalMs);
    const heartbeats = h.received(h.master, 'ApplicationHeartbeat').length;
    assert.ok(heartbeats >= 1, 'heartbeats >= 1');
    h.ask(DRIVER, unregisterApp, 1);
    h.advance(10);
    assert.equal(h.last(h.task(DRIVER), 'StatusResponse').status, 'SUCCESS');
    assert.deepEqual(h.last(h.master, 'UnregisterApplication'), unregisterApp);
    assert.equal(
      h.received(h.master, 'UnregisterShuffle').length,
      0,
      'the application unregister covers them',
    );
    assert.equal(h.lm.state().app.status, 'unregistered');
    assert.equal(h.lm.state().shuffles.size, 0);
    h.answer(h.master, 'UnregisterApplication', () => ({
      type: 'StatusResponse',
      status: 'SUCCESS',
      message: '',
    }));
    h.advance(5 * baseConfig.heartbeatIntervalMs);
    assert.equal(
      h.received(h.master, 'ApplicationHeartbeat').length,
      heartbeats,
      'no heartbeat after the end',
    );
    assert.equal(h.received(h.master, 'UnregisterApplication').length, 1, 'confirmed: not sent again');

    h.ask('map-9', register(7), 2);
    h.advance(10);
    const refused = h.last(h.task('map-9'), 'RegisterShuffleResponse');
    assert.equal(refused.status, 'SHUFFLE_UNREGISTERED');
    assert.match(refused.message, /application app was unregistered by its driver/);
    assert.equal(h.received(h.master, 'RequestSlots').length, 1);

    h.ask(DRIVER, unregisterApp, 3);
    h.advance(10);
    assert.equal(h.received(h.task(DRIVER), 'StatusResponse').length, 2, 'a repeat is answered');
    assert.equal(h.received(h.master, 'UnregisterApplication').length, 1, 'and not forwarded again');
  });

  it('does not ask a master that refused the application', () => {
    const h = new Harness({ release: '0.2.0' });
    h.registerApp('CLIENT_RELEASE_REFUSED', 'server release 0.6.0 refuses client release 0.2.0');
    h.ask(DRIVER, unregisterShuffle(0), 1);
    h.ask(DRIVER, unregisterApp, 2);
    h.advance(10);
    assert.equal(h.received(h.master, 'UnregisterShuffle').length, 0);
    assert.equal(h.received(h.master, 'UnregisterApplication').length, 0);
    assert.deepEqual(
      h.received(h.task(DRIVER), 'StatusResponse').map((r) => r.status),
      ['SUCCESS', 'SUCCESS'],
    );
  });

  it('refuses an unregister meant for another application', () => {
    const h = new Harness();
    h.registered(1, 1);
    h.ask(DRIVER, { type: 'UnregisterApplication', appId: 'other' }, 1);
    h.advance(10);
    const answer = h.last(h.task(DRIVER), 'StatusResponse');
    assert.equal(answer.status, 'REQUEST_FAILED');
    assert.match(answer.message, /serves application app, not other; send it to lm-other/);
    assert.equal(h.lm.state().app.status, 'registered');
    assert.equal(h.lm.state().shuffles.size, 1);
  });

  type Stage = 'requesting' | 'reserving' | 'reviving' | 'parked' | 'committing';
  const stages: Stage[] = ['requesting', 'reserving', 'reviving', 'parked', 'committing'];

  it('property: whatever stage each shuffle is in, unregistering answers every waiting task once and leaves nothing behind', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...stages), { minLength: 1, maxLength: 3 }).chain((shuffleStages) =>
          fc.tuple(
            fc.constant(shuffleStages),
            fc.shuffledSubarray(
              shuffleStages.map((_, s) => s),
              { minLength: shuffleStages.length },
            ),
            fc.boolean(),
          ),
        ),
        ([shuffleStages, order, endApp]) => {
          const h = new Harness();
          h.registerApp();
          const asked = new Map<string, number>();
          let requestId = 100;
          const ask = (from: string, message: Message) => {
            asked.set(from, (asked.get(from) ?? 0) + 1);
            h.ask(from, message, requestId++);
          };
          const ok = { type: 'StatusResponse' as const, status: 'SUCCESS' as const, message: '' };
          shuffleStages.forEach((stage, s) => {
            ask(`map-${s}-0`, register(s));
            h.advance(10);
            if (stage === 'requesting') return;
            h.answer(h.master, 'RequestSlots', (e) =>
              e.message.shuffleId === s ? offer(2, 3, 1) : undefined,
            );
            h.advance(10);
            if (stage === 'reserving') return;
            for (const w of h.workers)
              h.answer(w, 'ReserveSlots', (e) => (e.message.shuffleId === s ? ok : undefined));
            h.advance(10);
            const location = h.last(h.task(`map-${s}-0`), 'RegisterShuffleResponse').locations[0]!;
            if (stage === 'reviving') {
              ask(`map-${s}-1`, {
                type: 'Revive',
                appId: 'app',
                shuffleId: s,
                mapId: 1,
                attemptId: 0,
                requests: [{ partitionId: 0, epoch: 0, oldLocation: location, cause: 'HARD_SPLIT' }],
              });
              h.advance(150);
              return;
            }
            const mapperEnd = (mapId: number): Message => ({
              type: 'MapperEnd',
              appId: 'app',
              shuffleId: s,
              mapId,
              attemptId: 0,
              numMappers: 2,
              written: [],
            });
            ask(`map-${s}-0`, mapperEnd(0));
            if (stage === 'committing') ask(`map-${s}-1`, mapperEnd(1));
            ask(`reduce-${s}`, { type: 'GetReducerFileGroup', appId: 'app', shuffleId: s });
            h.advance(10);
          });
          const sent = () =>
            (['RequestSlots', 'ReserveSlots', 'CommitFiles'] as const).map((type) =>
              [h.master, ...h.workers].reduce((sum, p) => sum + h.received(p, type).length, 0),
            );
          const before = sent();

          if (endApp) ask(DRIVER, unregisterApp);
          else for (const s of order) ask(DRIVER, unregisterShuffle(s));
          h.advance(10);

          const state = h.lm.state();
          assert.equal(state.shuffles.size, 0);
          assert.equal(state.reservations.size, 0);
          assert.equal(state.reviveCalls.size, 0);
          assert.equal(state.parkedFileGroups.size, 0);
          for (const open of state.requests.open.values()) {
            assert.ok(
              ['unregisterShuffle', 'unregisterApp', 'heartbeat', 'destroy'].includes(open.purpose.kind),
              `request ${open.purpose.kind} left open`,
            );
          }
          h.advance(5 * baseConfig.requestTimeoutMs);
          const after = sent();
          assert.deepEqual(after, before, 'nothing more is asked for a forgotten shuffle');
          for (const [task, count] of asked) {
            const answers = h.task(task).inbox.length;
            assert.equal(answers, count, `${task} asked ${count} time(s) and got ${answers} answer(s)`);
          }
          assert.equal(
            h.received(h.master, 'UnregisterShuffle').length,
            endApp ? 0 : shuffleStages.length * baseConfig.maxRequestAttempts,
          );
          assert.equal(
            h.received(h.master, 'UnregisterApplication').length,
            endApp ? baseConfig.maxRequestAttempts : 0,
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});
