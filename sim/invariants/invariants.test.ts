import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PartitionLocation, WorkerId } from '../../core/domain/index.ts';
import type { Effect, Envelope, Input } from '../../core/machines/effects.ts';
import {
  MASTER_STATE_PREFIX,
  workerEntryKey,
  type WorkerSection,
} from '../../core/machines/master/layout.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { Observers } from '../world/observers.ts';
import { World, type Observer } from '../world/world.ts';
import { admissionDecisions } from './admission.ts';
import { diskBudgets } from './budget.ts';
import { diskChargedForDiskFaults } from './disk-charges.ts';
import { epochsIncrease, replicaPlacement } from './locations.ts';
import { memoryUse } from './memory.ts';
import { committedReads } from './reads.ts';
import { noSlotsOnUnavailable } from './slots.ts';

// The checkers read only messages and effects, so each is fed hand-made ones here, through a world that records
// the violation (its nodes never run).

const worker = (n: number): WorkerId => ({
  host: `h${n}`,
  rpcPort: 1,
  pushPort: 2,
  fetchPort: 3,
  replicatePort: 4,
});
const key = (n: number) => `h${n}:1:2:3:4`;
const storage = { type: 'HDD' as const, mountPoint: '/d', availableTypes: 2 };

function location(partitionId: number, epoch: number, primary: number, replica?: number): PartitionLocation {
  const base = { partitionId, epoch, worker: worker(primary), mode: 'PRIMARY' as const, storage };
  return replica === undefined
    ? base
    : { ...base, peer: { ...base, worker: worker(replica), mode: 'REPLICA' } };
}

function receive(from: string, to: string, message: Message, ids: Partial<Envelope> = {}): Input {
  return { kind: 'receive', envelope: { from, to, fromRelease: '0.6.0', message, ...ids } };
}

function send(to: string, message: Message, ids: { requestId?: number; inReplyTo?: number } = {}): Effect {
  return { kind: 'send', to, message, ...ids };
}

// Through the world's own dispatch, so that a checker that does not subscribe to what it checks fails here.
function harness(observer: Observer) {
  const world = new World({ seed: 0 });
  const observers = new Observers();
  observers.add(observer);
  return {
    world,
    input: (node: string, input: Input) => observers.input(node, input, world),
    effects: (node: string, effects: Effect[]) => observers.effects(node, effects, world),
    /** The effect leaves the node (a reply the machine held behind a persist is released). */
    departure: (node: string, effect: Effect) => observers.departure(node, effect, world),
    start: (node: string) => observers.start(node, world),
    crash: (node: string) => observers.crash(node, world),
    /** Moves the world's clock to `ms` and does `then` there. */
    at: (ms: number, then: () => void) => {
      world.schedule(ms, 'test step', then);
      world.run({ until: ms, maxEvents: Number.MAX_SAFE_INTEGER });
    },
    violation: () => world.violation,
  };
}

const HEARTBEAT_TIMEOUT = 120_000;

type Harness = ReturnType<typeof harness>;

/** Worker `worker` commits primary `file` of shuffle a-0 for lm-a (a CommitFiles and its answer). */
function commitFile(h: Harness, worker: string, file: string, requestId = 1): void {
  h.effects('lm-a', [
    send(
      worker,
      { type: 'CommitFiles', appId: 'a', shuffleId: 0, primaryIds: [file], replicaIds: [], mapAttempts: [0] },
      { requestId },
    ),
  ]);
  h.effects(worker, [
    send(
      'lm-a',
      {
        type: 'CommitFilesResponse',
        status: 'SUCCESS',
        committedPrimaries: [{ uniqueId: file, mode: 'PRIMARY', storage, bytes: 10, chunkOffsets: [0, 10] }],
        committedReplicas: [],
        failedPrimaryIds: [],
        failedReplicaIds: [],
        message: '',
      },
      { inReplyTo: requestId },
    ),
  ]);
}

/** reduce-a asks `worker` for primary `file` of a-0, and the worker answers `status` saying `message`. */
function openFile(
  h: Harness,
  worker: string,
  file: string,
  status: 'SUCCESS' | 'OPEN_STREAM_FAILED',
  message: string,
): void {
  h.effects('reduce-a', [
    send(
      worker,
      { type: 'OpenStream', shuffleKey: 'a-0', uniqueId: file, mode: 'PRIMARY' },
      { requestId: 5 },
    ),
  ]);
  const streamId = status === 'SUCCESS' ? 1 : -1;
  const chunkOffsets = status === 'SUCCESS' ? [0] : [];
  h.effects(worker, [
    send(
      'reduce-a',
      { type: 'OpenStreamResponse', status, streamId, chunkOffsets, message },
      { inReplyTo: 5 },
    ),
  ]);
}

describe('invariant checkers', () => {
  it('disk-charged-for-disk-faults: a disk is marked failed only while handling a failure of its own', () => {
    const charge = (disk: string): Effect => ({
      kind: 'log',
      level: 'error',
      event: 'worker.disk.failed',
      fields: { disk, problem: 'READ_OR_WRITE_FAILURE' },
    });
    const onDisk = (op: number, mountPoint: string): Extract<Effect, { kind: 'createFile' }> => ({
      kind: 'createFile',
      op,
      file: { id: `app-0/${op}`, tier: 'HDD', mountPoint },
    });
    const fresh = () => harness(diskChargedForDiskFaults((node) => node.startsWith('h')));
    const blamed = fresh();
    blamed.at(1, () =>
      blamed.effects(key(1), [{ kind: 'ioBatch', ops: [onDisk(1, '/d'), onDisk(2, '/e')] }, onDisk(3, '/d')]),
    );
    blamed.at(2, () => {
      blamed.input(key(1), {
        kind: 'ioBatchDone',
        completions: [
          { kind: 'ioDone', op: 1 },
          { kind: 'ioFailed', op: 2, error: 'IO_ERROR' },
        ],
      });
      blamed.effects(key(1), [charge('/e')]);
    });
    blamed.at(3, () => {
      // Not a worker: nothing to check.
      blamed.input('map-a', { kind: 'ioFailed', op: 3, error: 'NO_DESCRIPTORS' });
      blamed.effects('map-a', [charge('/d')]);
    });
    assert.equal(blamed.violation(), undefined);

    // Out of descriptors: the failure is the process's, not the disk's.
    blamed.at(4, () => {
      blamed.input(key(1), { kind: 'ioFailed', op: 3, error: 'NO_DESCRIPTORS' });
      blamed.effects(key(1), [charge('/d')]);
    });
    assert.equal(blamed.violation()?.invariant, 'disk-charged-for-disk-faults');
    assert.match(
      blamed.violation()?.detail ?? '',
      /disk \/d failed .* handling NO_DESCRIPTORS: none of them is the fault of a disk/,
    );

    // A failure on another disk does not excuse the mark.
    const other = fresh();
    other.at(1, () => other.effects(key(1), [onDisk(1, '/d'), onDisk(2, '/e')]));
    other.at(2, () => {
      other.input(key(1), { kind: 'ioFailed', op: 2, error: 'NO_SPACE' });
      other.effects(key(1), [charge('/d')]);
    });
    assert.match(other.violation()?.detail ?? '', /disk \/d failed .* only \/e failed on its own/);

    // Nor does the failure an earlier step handled.
    const later = fresh();
    later.at(1, () => later.effects(key(1), [onDisk(1, '/d')]));
    later.at(2, () => later.input(key(1), { kind: 'ioFailed', op: 1, error: 'IO_ERROR' }));
    later.at(3, () => later.effects(key(1), [charge('/d')]));
    assert.match(later.violation()?.detail ?? '', /in a step that handled no I\/O failure/);
  });

  it('replica-placement: fails an offer with a replica on its primary’s worker, passes a proper pair', () => {
    const h = harness(replicaPlacement());
    const offer = (replica: number): Message => ({
      type: 'RequestSlotsResponse',
      status: 'SUCCESS',
      workerResource: [
        {
          worker: worker(1),
          networkLocation: '/rack-1',
          primaries: [location(0, 0, 1, replica)],
          replicas: [],
        },
      ],
      unplaced: [],
      message: '',
    });
    h.effects('master-0', [send('lm-a', offer(2))]);
    assert.equal(h.violation(), undefined);
    h.effects('master-0', [send('lm-a', offer(1))]);
    assert.equal(h.violation()?.invariant, 'replica-placement');
    assert.match(
      h.violation()?.detail ?? '',
      /partition 0 epoch 0 PRIMARY and its REPLICA both on h1:1:2:3:4/,
    );
  });

  it('epoch-increase: a revive must answer with a newer epoch than the one that failed', () => {
    const h = harness(epochsIncrease());
    const revive: Message = {
      type: 'Revive',
      appId: 'a',
      shuffleId: 0,
      mapId: 0,
      attemptId: 0,
      requests: [{ partitionId: 4, epoch: 2, cause: 'HARD_SPLIT' }],
    };
    h.effects('map-a', [send('lm-a', revive, { requestId: 7 })]);
    const answer = (epoch: number): Input =>
      receive(
        'lm-a',
        'map-a',
        {
          type: 'ReviveResponse',
          results: [
            { partitionId: 4, status: 'SUCCESS', newLocation: location(4, epoch, 1), oldAvailable: true },
          ],
          endedMapIds: [],
        },
        { inReplyTo: 7 },
      );
    h.input('map-a', answer(3));
    assert.equal(h.violation(), undefined);
    h.input('map-a', answer(2));
    assert.equal(h.violation()?.invariant, 'epoch-increase');
  });

  it('read-committed and committed-survives-graceful-restart follow commits, restarts and releases', () => {
    const w = key(1);
    /** A worker that committed file 3-0 of a-0 (or not), went through `between`, and is asked for it again. */
    const story = (options: {
      commit: boolean;
      between: 'nothing' | 'graceful' | 'graceful-then-immediately' | 'crash' | 'destroy';
    }) => {
      const checker = committedReads((node) => node.startsWith('h'));
      const h = harness(checker);
      checker.onStart?.(w, h.world);
      if (options.commit) commitFile(h, w, '3-0');
      if (options.between === 'graceful' || options.between === 'graceful-then-immediately') {
        h.input(w, { kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
        if (options.between === 'graceful-then-immediately') {
          // The master hands on an operator's Immediately while the worker drains: it exits at once, data dropped.
          h.input(
            w,
            receive('master-0', w, {
              type: 'WorkerHeartbeatResponse',
              registered: true,
              expiredShuffleKeys: [],
              workerEvent: 'Immediately',
            }),
          );
        }
        checker.onExit?.(w, 0, 'graceful', h.world);
      } else if (options.between === 'crash') {
        checker.onCrash?.(w, h.world);
      } else if (options.between === 'destroy') {
        h.input(
          w,
          receive('lm-a', w, {
            type: 'DestroySlots',
            appId: 'a',
            shuffleId: 0,
            primaryIds: ['3-0'],
            replicaIds: [],
          }),
        );
      }
      if (options.between !== 'nothing') checker.onStart?.(w, h.world);
      const served = (status: 'SUCCESS' | 'OPEN_STREAM_FAILED') => {
        openFile(h, w, '3-0', status, 'gone');
        return h.violation()?.invariant;
      };
      return served;
    };
    assert.equal(story({ commit: true, between: 'nothing' })('SUCCESS'), undefined);
    assert.equal(story({ commit: false, between: 'nothing' })('SUCCESS'), 'read-committed');
    assert.equal(
      story({ commit: true, between: 'graceful' })('OPEN_STREAM_FAILED'),
      'committed-survives-graceful-restart',
    );
    assert.equal(
      story({ commit: true, between: 'graceful-then-immediately' })('OPEN_STREAM_FAILED'),
      undefined,
      'an Immediately during the drain turns the exit into an immediate one (swarm seed 9152)',
    );
    assert.equal(
      story({ commit: true, between: 'crash' })('OPEN_STREAM_FAILED'),
      undefined,
      'a power loss may lose it',
    );
    assert.equal(
      story({ commit: true, between: 'destroy' })('OPEN_STREAM_FAILED'),
      undefined,
      'it was destroyed',
    );
  });

  it('committed-survives-graceful-restart lets a worker told to leave refuse reads until it is back', () => {
    const w = key(1);
    const leavingRefusal = 'the worker is Exit and serves no more reads';
    /** Commits file 3-0 of a-0, restarts gracefully, then meets `told` and refuses the file with `refusal`. */
    const refusedAfter = (told: 'nothing' | 'Immediately' | 'Decommission') => {
      const checker = committedReads((node) => node.startsWith('h'));
      const h = harness(checker);
      const event = (workerEvent: 'Immediately' | 'Decommission') =>
        h.input(
          w,
          receive('master-0', w, {
            type: 'WorkerHeartbeatResponse',
            registered: true,
            expiredShuffleKeys: [],
            workerEvent,
          }),
        );
      h.start(w);
      commitFile(h, w, '3-0');
      h.input(w, { kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
      checker.onExit?.(w, 0, 'graceful', h.world);
      h.start(w);
      if (told === 'Immediately' || told === 'Decommission') event(told);
      // The new generation drops its data on the way out and a read arrives before the worker has ended.
      openFile(h, w, '3-0', 'OPEN_STREAM_FAILED', leavingRefusal);
      return h.violation()?.invariant;
    };
    assert.equal(
      refusedAfter('Immediately'),
      undefined,
      'an immediate exit dropped the files before the worker ended (swarm seed 53878)',
    );
    assert.equal(refusedAfter('Decommission'), undefined, 'a decommission past its deadline drops them too');
    assert.equal(
      refusedAfter('nothing'),
      'committed-survives-graceful-restart',
      'a worker nobody told to leave since its graceful restart must not say it is leaving',
    );
  });

  it('committed-survives-graceful-restart forgets a request to leave cut short by a crash', () => {
    const w = key(1);
    const checker = committedReads((node) => node.startsWith('h'));
    const h = harness(checker);
    h.start(w);
    // Told to leave gracefully, the worker crashes before it has left.
    h.input(
      w,
      receive('master-0', w, {
        type: 'WorkerHeartbeatResponse',
        registered: true,
        expiredShuffleKeys: [],
        workerEvent: 'Graceful',
      }),
    );
    checker.onCrash?.(w, h.world);
    h.start(w);
    commitFile(h, w, '4-0');
    // This generation ends without anyone asking it to leave gracefully: its data may be gone.
    checker.onExit?.(w, 1, 'exit', h.world);
    h.start(w);
    openFile(h, w, '4-0', 'OPEN_STREAM_FAILED', 'no such file');
    assert.equal(
      h.violation()?.invariant,
      undefined,
      'the graceful request belonged to the crashed generation, not to the one that ended ungracefully',
    );
  });

  it('no-slots-on-unavailable: the master may not offer what it was told is unavailable, nor a revive use it', () => {
    const observer = noSlotsOnUnavailable(
      (node) => node === 'master-0',
      (node) => node.startsWith('lm-'),
      () => HEARTBEAT_TIMEOUT,
    );
    const h = harness(observer);
    const offer = (n: number): Effect =>
      send('lm-a', {
        type: 'RequestSlotsResponse',
        status: 'SUCCESS',
        workerResource: [{ worker: worker(n), networkLocation: '/rack-1', primaries: [], replicas: [] }],
        unplaced: [],
        message: '',
      });
    // The master refuses to exclude a worker it never registered: such an exclusion is not counted.
    const acknowledged: Effect = { kind: 'adminReply', commandId: undefined, success: true, message: 'done' };
    h.input('master-0', { kind: 'admin', command: { type: 'excludeWorkers', add: [key(5)], remove: [] } });
    h.departure('master-0', acknowledged);
    h.effects('master-0', [offer(5)]);
    assert.equal(h.violation(), undefined, 'an exclusion of an unknown worker was refused, so it never held');
    h.effects('master-0', [
      send(key(1), { type: 'RegisterWorkerResponse', success: true, message: 'registered' }),
    ]);
    h.input('master-0', { kind: 'admin', command: { type: 'excludeWorkers', add: [key(1)], remove: [] } });
    h.effects('master-0', [offer(1)]);
    assert.equal(h.violation(), undefined, 'an exclusion counts once the master acknowledged it');
    h.departure('master-0', acknowledged);
    h.input('master-0', receive(key(2), 'master-0', { type: 'ReportWorkerUnavailable', worker: worker(2) }));
    h.input(
      'master-0',
      receive(key(2), 'master-0', {
        type: 'RegisterWorker',
        worker: worker(2),
        disks: [],
        networkLocation: '/r',
      }),
    );
    h.effects('master-0', [offer(2), offer(3)]);
    assert.equal(h.violation(), undefined, 'a worker that registered again is available again');
    // An exclusion and its lift taken together (they waited for a new leader): the master applied both in order, so
    // the exclusion's acknowledgement does not bind the worker while the lift's is still to come.
    h.effects('master-0', [
      send(key(4), { type: 'RegisterWorkerResponse', success: true, message: 'registered' }),
    ]);
    h.input('master-0', { kind: 'admin', command: { type: 'excludeWorkers', add: [key(4)], remove: [] } });
    h.input('master-0', { kind: 'admin', command: { type: 'excludeWorkers', add: [], remove: [key(4)] } });
    h.departure('master-0', acknowledged);
    h.effects('master-0', [offer(4)]);
    assert.equal(
      h.violation(),
      undefined,
      'a lift taken after an exclusion stands when the exclusion is answered',
    );
    h.effects('master-0', [offer(1)]);
    assert.equal(h.violation()?.invariant, 'no-slots-on-unavailable');
    assert.match(h.violation()?.detail ?? '', /a padding slot on h1:1:2:3:4 .* excluded by the operator/);

    const lm = harness(
      noSlotsOnUnavailable(
        () => false,
        (node) => node.startsWith('lm-'),
        () => HEARTBEAT_TIMEOUT,
      ),
    );
    lm.input(
      'lm-a',
      receive('master-0', 'lm-a', {
        type: 'ApplicationHeartbeatResponse',
        excludedWorkers: [],
        unknownWorkers: [],
        shuttingWorkers: [worker(4)],
      }),
    );
    const reserve = (epoch: number): Effect =>
      send(key(4), {
        type: 'ReserveSlots',
        appId: 'a',
        shuffleId: 0,
        primaries: [location(2, epoch, 4)],
        replicas: [],
        splitThreshold: 1,
        splitMode: 'SOFT',
        memoryEnabled: false,
      });
    lm.effects('lm-a', [reserve(1)]);
    assert.equal(lm.violation()?.invariant, 'no-slots-on-unavailable');

    // A worker the master no longer knows (lost) is as unavailable to a revive as an excluded one.
    const unknown = harness(
      noSlotsOnUnavailable(
        () => false,
        (node) => node.startsWith('lm-'),
        () => HEARTBEAT_TIMEOUT,
      ),
    );
    unknown.input(
      'lm-a',
      receive('master-0', 'lm-a', {
        type: 'ApplicationHeartbeatResponse',
        excludedWorkers: [],
        unknownWorkers: [worker(4)],
        shuttingWorkers: [],
      }),
    );
    unknown.effects('lm-a', [reserve(1)]);
    assert.match(unknown.violation()?.detail ?? '', /listed as lost \(unknown to the master\)/);
  });

  describe('no-slots-on-unavailable: lost workers and the client’s own exclusions', () => {
    const offerOn = (n: number, inReplyTo?: number): Effect =>
      send(
        'lm-a',
        {
          type: 'RequestSlotsResponse',
          status: 'SUCCESS',
          workerResource: [
            { worker: worker(n), networkLocation: '/r', primaries: [location(0, 0, n)], replicas: [] },
          ],
          unplaced: [],
          message: '',
        },
        inReplyTo === undefined ? {} : { inReplyTo },
      );
    const heartbeat: Message = {
      type: 'WorkerHeartbeat',
      worker: worker(1),
      disks: [],
      activeShuffleKeys: [],
      highWorkload: false,
      state: 'Normal',
    };
    const register: Message = { type: 'RegisterWorker', worker: worker(1), disks: [], networkLocation: '/r' };
    const checker = () =>
      harness(
        noSlotsOnUnavailable(
          (node) => node === 'master-0',
          () => false,
          () => HEARTBEAT_TIMEOUT,
        ),
      );
    const lostLog: Effect = {
      kind: 'log',
      level: 'warn',
      event: 'master.worker.lost',
      fields: { worker: key(1), cause: 'no heartbeat for more than 120000 ms' },
    };

    it('fails an offer on a worker the master declared lost, until it registers again; a heartbeat does not bring it back', () => {
      const h = checker();
      h.start('master-0');
      h.input('master-0', receive(key(1), 'master-0', register));
      h.effects('master-0', [lostLog]);
      h.input('master-0', receive(key(1), 'master-0', heartbeat, { requestId: 9 }));
      h.effects('master-0', [offerOn(1)]);
      assert.match(
        h.violation()?.detail ?? '',
        /on h1:1:2:3:4 to lm-a, which the master had been told is lost \(declared so by the master itself: no heartbeat/,
      );

      const again = checker();
      again.start('master-0');
      again.effects('master-0', [lostLog]);
      again.input('master-0', receive(key(1), 'master-0', register));
      again.effects('master-0', [offerOn(1)]);
      assert.equal(again.violation(), undefined, 'registered again: available again');
    });

    it('holds a restarted master to a stop or a verdict only if its store holds it (seed 53975)', () => {
      const exit: Message = { ...heartbeat, state: 'Exit' };
      const restartedAfter = (
        heard: (h: ReturnType<typeof checker>) => void,
        storedSection?: WorkerSection,
      ) => {
        const h = checker();
        h.start('master-0');
        h.input('master-0', receive(key(1), 'master-0', register));
        heard(h);
        if (storedSection !== undefined)
          h.world.coordination.set(workerEntryKey(MASTER_STATE_PREFIX, storedSection, key(1)), '{}');
        // The master crashes and starts again from its store alone.
        h.start('master-0');
        h.effects('master-0', [offerOn(1)]);
        return h.violation();
      };
      const exitHeard = (h: ReturnType<typeof checker>) =>
        h.input('master-0', receive(key(1), 'master-0', exit, { requestId: 3 }));
      const reportHeard = (h: ReturnType<typeof checker>) =>
        h.input(
          'master-0',
          receive(key(1), 'master-0', { type: 'ReportWorkerUnavailable', worker: worker(1) }),
        );
      const declaredLost = (h: ReturnType<typeof checker>) => h.effects('master-0', [lostLog]);
      assert.equal(restartedAfter(exitHeard), undefined, 'its Exit heartbeat was never stored: forgotten');
      assert.equal(restartedAfter(reportHeard), undefined, 'its shutdown report was never stored: forgotten');
      assert.equal(restartedAfter(declaredLost), undefined, 'its verdict was never stored: forgotten');
      assert.match(
        restartedAfter(exitHeard, 'stopped')?.detail ?? '',
        /which the master had been told is stopped \(its last heartbeat reported its exit\)/,
      );
      assert.match(
        restartedAfter(reportHeard, 'shutdown')?.detail ?? '',
        /which the master had been told is shutting down \(it reported so\)/,
      );
      assert.match(
        restartedAfter(declaredLost, 'lost')?.detail ?? '',
        /which the master had been told is lost \(declared so by the master itself/,
      );
    });

    it('fails an offer on a worker the master has not heard from for more than twice its heartbeat timeout, counted from its start', () => {
      const h = checker();
      h.start('master-0');
      h.input('master-0', receive(key(1), 'master-0', register));
      h.at(2 * HEARTBEAT_TIMEOUT, () => h.effects('master-0', [offerOn(1)]));
      assert.equal(
        h.violation(),
        undefined,
        'exactly twice the timeout: the master may not have checked yet',
      );
      h.at(2 * HEARTBEAT_TIMEOUT + 1, () => {
        // A restarted master gives every worker a full timeout again (it could not hear anyone while down).
        h.start('master-0');
        h.effects('master-0', [offerOn(1)]);
      });
      assert.equal(h.violation(), undefined, 'a master that just started has had no chance to find it lost');
      h.at(4 * HEARTBEAT_TIMEOUT + 2, () => h.effects('master-0', [offerOn(1)]));
      assert.match(
        h.violation()?.detail ?? '',
        /which the master had not heard from for 240001 ms, more than twice its worker heartbeat timeout \(120000 ms\)/,
      );

      const heard = checker();
      heard.start('master-0');
      heard.input('master-0', receive(key(1), 'master-0', register));
      heard.at(HEARTBEAT_TIMEOUT, () => heard.input('master-0', receive(key(1), 'master-0', heartbeat)));
      heard.at(3 * HEARTBEAT_TIMEOUT, () => heard.effects('master-0', [offerOn(1)]));
      assert.equal(heard.violation(), undefined, 'its heartbeats count');
    });

    it('fails an answer to a RequestSlots that offers a worker the request itself excluded', () => {
      const h = checker();
      h.start('master-0');
      h.input('master-0', receive(key(1), 'master-0', register));
      h.input('master-0', receive(key(2), 'master-0', { ...register, worker: worker(2) }));
      const request = (excludedWorkers: string[]): Message => ({
        type: 'RequestSlots',
        appId: 'a',
        shuffleId: 0,
        partitionIds: [0],
        replicate: false,
        rackAware: false,
        availableTypes: 2,
        excludedWorkers,
        maxWorkers: 10,
      });
      h.input('master-0', receive('lm-a', 'master-0', request([key(1)]), { requestId: 4 }));
      h.input('master-0', receive('lm-a', 'master-0', request([]), { requestId: 5 }));
      h.effects('master-0', [offerOn(1, 5), offerOn(2, 4)]);
      assert.equal(h.violation(), undefined, 'each answer is held against its own request');
      h.input('master-0', receive('lm-a', 'master-0', request([key(1)]), { requestId: 6 }));
      h.effects('master-0', [offerOn(1, 6)]);
      assert.match(
        h.violation()?.detail ?? '',
        /on h1:1:2:3:4 to lm-a, which lm-a excluded in its RequestSlots/,
      );
    });
  });

  it('no-slots-on-unavailable: a decommission called off ends with a heartbeat in Normal state sent after the report, not a stale one', () => {
    const h = harness(
      noSlotsOnUnavailable(
        (node) => node === 'master-0',
        () => false,
        () => HEARTBEAT_TIMEOUT,
      ),
    );
    const offer: Effect = send('lm-a', {
      type: 'RequestSlotsResponse',
      status: 'SUCCESS',
      workerResource: [{ worker: worker(1), networkLocation: '/r', primaries: [], replicas: [] }],
      unplaced: [],
      message: '',
    });
    const heartbeat = (state: 'Normal' | 'InDecommissionThenIdle'): Message => ({
      type: 'WorkerHeartbeat',
      worker: worker(1),
      disks: [],
      activeShuffleKeys: [],
      highWorkload: false,
      state,
    });
    const report: Message = { type: 'ReportWorkerDecommission', worker: worker(1) };
    // The worker sends heartbeat 7 (Normal), then decommissions and reports it; the network delivers the report
    // first and the stale heartbeat after it: the master was not told the worker is back.
    h.effects(key(1), [send('master-0', heartbeat('Normal'), { requestId: 7 })]);
    h.effects(key(1), [send('master-0', report)]);
    h.input('master-0', receive(key(1), 'master-0', report));
    h.input('master-0', receive(key(1), 'master-0', heartbeat('Normal'), { requestId: 7 }));
    h.input('master-0', {
      kind: 'admin',
      command: { type: 'workerEvent', eventType: 'Recommission', workers: [key(1)] },
    });
    h.effects('master-0', [offer]);
    assert.match(
      h.violation()?.detail ?? '',
      /on h1:1:2:3:4 to lm-a, which the master had been told is decommissioning/,
    );

    // Called off by the operator: available again once a heartbeat sent after the report says Normal.
    const calledOff = (nextState: 'Normal' | 'InDecommissionThenIdle') => {
      const c = harness(
        noSlotsOnUnavailable(
          (node) => node === 'master-0',
          () => false,
          () => HEARTBEAT_TIMEOUT,
        ),
      );
      c.effects(key(1), [send('master-0', heartbeat('Normal'), { requestId: 7 })]);
      c.effects(key(1), [send('master-0', report)]);
      c.input('master-0', receive(key(1), 'master-0', report));
      c.input('master-0', {
        kind: 'admin',
        command: { type: 'workerEvent', eventType: 'Recommission', workers: [key(1)] },
      });
      c.effects(key(1), [send('master-0', heartbeat(nextState), { requestId: 8 })]);
      c.input('master-0', receive(key(1), 'master-0', heartbeat(nextState), { requestId: 8 }));
      c.effects('master-0', [offer]);
      return c.violation();
    };
    assert.equal(calledOff('Normal'), undefined);
    assert.equal(calledOff('InDecommissionThenIdle')?.invariant, 'no-slots-on-unavailable');
  });

  describe('disk-budget', () => {
    const disk = {
      mountPoint: '/d',
      type: 'HDD' as const,
      usableBytes: 350,
      totalBytes: 1000,
      status: 'HEALTHY' as const,
      avgFlushTimeNs: 0,
      avgFetchTimeNs: 0,
      activeSlots: 0,
    };
    const registration: Message = {
      type: 'RegisterWorker',
      worker: worker(1),
      disks: [disk],
      networkLocation: '/r',
    };
    const offer = (partitions: number[]): Effect =>
      send('lm-a', {
        type: 'RequestSlotsResponse',
        status: 'SUCCESS',
        workerResource: [
          {
            worker: worker(1),
            networkLocation: '/rack-1',
            primaries: partitions.map((p) => location(p, 0, 1)),
            replicas: [],
          },
        ],
        unplaced: [],
        message: '',
      });

    it('offers between two disk reports never exceed usable / estimate, counting earlier offers', () => {
      const h = harness(
        diskBudgets(
          (node) => node === 'master-0',
          () => 100,
        ),
      );
      h.input('master-0', receive(key(1), 'master-0', registration));
      h.effects('master-0', [offer([0, 1])]);
      assert.equal(h.violation(), undefined, '2 of a budget of 3');
      h.effects('master-0', [offer([2, 3])]);
      assert.equal(h.violation()?.invariant, 'disk-budget', 'only 1 slot was left');
      assert.match(h.violation()?.detail ?? '', /offered 2 slots on h1:1:2:3:4 disk \/d .* budget is 1/);
    });

    /** master-0 offers 2 slots of the disk's 3, then `between` happens, then master-1 offers 2 more. */
    const story = (between: (h: Harness, first: Effect) => void) => {
      const h = harness(
        diskBudgets(
          (node) => node.startsWith('master-'),
          () => 100,
        ),
      );
      h.input('master-0', receive(key(1), 'master-0', registration));
      const first = offer([0, 1]);
      h.effects('master-0', [first]);
      between(h, first);
      h.effects('master-1', [offer([2, 3])]);
      return h.violation();
    };

    it('books an offer for the next leader once its answer left (it is durable then)', () => {
      const violation = story((h, first) => h.departure('master-0', first));
      assert.equal(violation?.invariant, 'disk-budget', 'master-1 restored the booking and had 1 slot left');
    });

    it('books nothing for another master while the answer waits, nor once its master crashed (seed 84434)', () => {
      assert.equal(
        story(() => undefined),
        undefined,
        'an answer held behind its write binds only the master that decided it',
      );
      assert.equal(
        story((h) => h.crash('master-0')),
        undefined,
        'an answer that never left reserved nothing',
      );
    });

    it('books an answer that left after a newer report against nothing: the report replaced the disk', () => {
      const violation = story((h, first) => {
        h.input('master-0', receive(key(1), 'master-0', registration));
        h.departure('master-0', first);
      });
      assert.equal(violation, undefined, 'the newer report says 350 usable bytes');
    });
  });

  describe('memory-without-enabling', () => {
    interface MemoryCase {
      readonly release?: '0.5.1' | '0.6.0';
      readonly guard?: boolean;
      readonly memoryEnabled?: boolean;
      /** The reserved location's storage; undefined: no lifecycle manager reserved it. */
      readonly storage?: { readonly type: 'MEMORY' | 'HDD'; readonly mask: number };
      readonly epoch?: number;
      /** The mask the application asked the master with, when the master offered the location. */
      readonly offeredFor?: number;
    }
    const run = (c: MemoryCase) => {
      const memoryEnabled = c.memoryEnabled ?? false;
      const observer = memoryUse({
        app: () => ({ release: c.release ?? '0.5.1', memoryEnabled }),
        guardOn: () => c.guard ?? false,
      });
      const h = harness(observer);
      const epoch = c.epoch ?? 1;
      const storage = c.storage ?? { type: 'MEMORY', mask: 0 };
      const copy = {
        ...location(3, epoch, 1),
        storage: { type: storage.type, mountPoint: '', availableTypes: storage.mask },
      };
      if (c.offeredFor !== undefined) {
        const request: Message = {
          type: 'RequestSlots',
          appId: 'app-1',
          shuffleId: 0,
          partitionIds: [3],
          replicate: false,
          rackAware: false,
          availableTypes: c.offeredFor,
          excludedWorkers: [],
          maxWorkers: 10,
        };
        h.input('master-0', receive('lm-app-1', 'master-0', request, { requestId: 2 }));
        h.effects('master-0', [
          send(
            'lm-app-1',
            {
              type: 'RequestSlotsResponse',
              status: 'SUCCESS',
              workerResource: [{ worker: worker(1), networkLocation: '/r', primaries: [copy], replicas: [] }],
              unplaced: [],
              message: '',
            },
            { inReplyTo: 2 },
          ),
        ]);
      }
      if (c.storage !== undefined || c.offeredFor !== undefined || c.epoch !== undefined) {
        h.effects('lm-app-1', [
          send(key(1), {
            type: 'ReserveSlots',
            appId: 'app-1',
            shuffleId: 0,
            primaries: [copy],
            replicas: [],
            splitThreshold: 1,
            splitMode: 'SOFT',
            memoryEnabled,
          }),
        ]);
      }
      h.effects(key(1), [
        { kind: 'createFile', op: 1, file: { id: `app-1-0/3-${epoch}-0`, tier: 'MEMORY', mountPoint: '' } },
      ]);
      return { violation: h.violation(), findings: observer.findings() };
    };
    const revived = { storage: { type: 'MEMORY', mask: 0 }, epoch: 1 } as const;

    it('reports an old client’s revived location in memory, fails a new client and a guarded worker', () => {
      const old = run(revived);
      assert.equal(old.violation, undefined);
      assert.deepEqual(
        old.findings.map((f) => [f.appId, f.how]),
        [['app-1', 'revived']],
      );
      assert.match(run({ ...revived, release: '0.6.0' }).violation?.detail ?? '', /contract rule 3/);
      assert.match(run({ ...revived, guard: true }).violation?.detail ?? '', /the memory guard is on/);
    });

    it('allows memory only where the reserved location’s mask permits it, whoever the client', () => {
      const hdd = { type: 'MEMORY', mask: 2 } as const;
      assert.match(run({ storage: hdd }).violation?.detail ?? '', /mask 2, which does not permit MEMORY/);
      assert.match(
        run({ storage: hdd, memoryEnabled: true }).violation?.detail ?? '',
        /mask 2, which does not permit MEMORY/,
      );
      assert.equal(
        run({ storage: { type: 'MEMORY', mask: 1 | 2 }, memoryEnabled: true }).violation,
        undefined,
        'MEMORY listed by the application',
      );
    });

    it('lets an old client reach memory only through the old default of a location its own lifecycle manager placed', () => {
      assert.deepEqual(
        run({ ...revived, epoch: 0 }).findings.map((f) => f.how),
        ['re-placed after a failed reserve'],
      );
      // An offer carries the mask the application asked with: the master cannot hand out the old default.
      assert.match(
        run({ ...revived, epoch: 0, offeredFor: 2 }).violation?.detail ?? '',
        /the master offered partition 3 on h1:1:2:3:4 to lm-app-1 with the available-types mask 0, but the request asked for 2/,
      );
      // An honest offer passes the master's check; the file in memory is then the worker's fault.
      assert.match(
        run({ storage: { type: 'HDD', mask: 2 }, epoch: 0, offeredFor: 2 }).violation?.detail ?? '',
        /^file app-1-0\/3-0-0 was created in memory, but .* mask 2, which does not permit MEMORY/,
      );
      assert.match(
        run({ storage: { type: 'HDD', mask: 0 } }).violation?.detail ?? '',
        /type HDD, mask 0\) is not the old default of a revive/,
      );
      assert.match(run({}).violation?.detail ?? '', /no lifecycle manager reserved that location/);
    });
  });

  it('admission: a refusal must be one core/release decides, naming both releases', () => {
    const check = (server: '0.6.0' | '0.3.0', client: '0.2.0' | '0.6.0', message: string) => {
      const h = harness(
        admissionDecisions(
          (node) => node === 'master-0',
          (node) => node.startsWith('lm-'),
        ),
      );
      const machine = { step: () => ({ state: null, effects: [] }) };
      h.world.addNode({ id: 'master-0', role: 'master', release: server, machine, initialState: () => null });
      h.world.addNode({
        id: 'lm-a',
        role: 'lifecycle-manager',
        release: client,
        machine,
        initialState: () => null,
      });
      h.effects('master-0', [
        send('lm-a', { type: 'StatusResponse', status: 'CLIENT_RELEASE_REFUSED', message }),
      ]);
      return h.violation();
    };
    assert.equal(check('0.6.0', '0.2.0', 'server release 0.6.0 refuses client release 0.2.0'), undefined);
    assert.match(check('0.6.0', '0.2.0', 'refused')?.detail ?? '', /does not name both releases/);
    assert.match(
      check('0.3.0', '0.2.0', 'server 0.3.0 refuses 0.2.0')?.detail ?? '',
      /although a 0.3.0 server admits it/,
    );

    // Serving a client the server must refuse is a violation too.
    const h = harness(
      admissionDecisions(
        (node) => node === 'master-0',
        (node) => node.startsWith('lm-'),
      ),
    );
    const machine = { step: () => ({ state: null, effects: [] }) };
    h.world.addNode({ id: 'master-0', role: 'master', release: '0.5.0', machine, initialState: () => null });
    h.world.addNode({
      id: 'lm-a',
      role: 'lifecycle-manager',
      release: '0.6.0',
      machine,
      initialState: () => null,
    });
    h.effects('master-0', [
      send('lm-a', { type: 'StatusResponse', status: 'SUCCESS', message: '' }, { inReplyTo: 1 }),
    ]);
    assert.match(
      h.violation()?.detail ?? '',
      /answered lm-a \(client 0.6.0\) with StatusResponse although a 0.5.0 server must refuse it/,
    );
  });
});
