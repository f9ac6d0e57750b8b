import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type { Effect, FileRef } from '../effects.ts';
import { initialWorkerState, workerMachine, type WorkerMachineState } from './index.ts';
import { testWorkerConfig } from './testing.ts';
import {
  CLIENT,
  commitFiles,
  Harness,
  KEY,
  location,
  MAPPER,
  ofKind,
  onlySent,
  pushData,
  recoveryStore,
  registeredWorker,
  SELF,
} from './test-kit.ts';

const MASTER = masterNodeId();
const GRACE = 600_000;
const HEARTBEAT = 30_000;

function disk(id: string, mountPoint = '/disk1'): FileRef {
  return { id, tier: 'HDD', mountPoint };
}

/** A worker started with `recovered` and the files `found` on its disks, registered with the master. */
function started(found: readonly FileRef[], recovered: ReadonlyMap<string, string> = new Map()) {
  const harness = new Harness(
    workerMachine,
    initialWorkerState(testWorkerConfig(SELF, { leftoverGraceMs: GRACE, heartbeatIntervalMs: HEARTBEAT })),
  );
  const first = harness.step({ kind: 'start', recovered, leftovers: found });
  const register = onlySent(first, 'RegisterWorker');
  harness.receive(
    MASTER,
    { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
    { inReplyTo: register.requestId!, principal: { kind: 'server' } },
  );
  return { harness, first };
}

/** The next heartbeat, answered with the master's list of shuffles it no longer has. */
function heartbeat(
  harness: Harness<WorkerMachineState>,
  expired: (named: readonly string[]) => readonly string[],
): { named: readonly string[]; effects: Effect[] } {
  const beat = onlySent(harness.timer('heartbeat', harness.now + HEARTBEAT), 'WorkerHeartbeat');
  const named = beat.message.activeShuffleKeys;
  const effects = harness.receive(
    MASTER,
    {
      type: 'WorkerHeartbeatResponse',
      registered: true,
      expiredShuffleKeys: expired(named),
      workerEvent: 'None',
    },
    { inReplyTo: beat.requestId!, principal: { kind: 'server' } },
  );
  return { named, effects };
}

/** The recovery record of a worker that committed one file of shuffle KEY (`KEY/0-0-0` on a disk). */
function committedRecovery(): { recovered: Map<string, string>; file: FileRef } {
  const harness = registeredWorker(SELF);
  harness.completeIo(
    harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', SELF)],
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 1 },
    ),
  );
  harness.completeIo(
    harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 0, size: 10 }), { requestId: 2 }),
  );
  const effects = harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 3 });
  const all = [...effects, ...harness.completeIo(effects)];
  const recovered = recoveryStore(all);
  const file = [...harness.state.shuffles.get(KEY)!.files.values()][0]!.file;
  return { recovered, file };
}

describe('worker: files an earlier run left on the disks', () => {
  it('names their shuffles in heartbeats, keeps them while the master knows them, deletes them after the grace', () => {
    const left = [disk('gone-0/0-0-0'), disk('gone-0/1-0-1', '/disk2'), disk('alive-3/0-0-0')];
    const { harness, first } = started(left);
    assert.ok(
      ofKind(first, 'log').some((line) => line.event === 'worker.leftovers.found'),
      "ofKind(first, 'log').some((line) => line.event === 'worker.leftovers.found')",
    );

    // Within the grace: the master no longer has gone-0, but nothing is deleted yet.
    let beat = heartbeat(harness, () => ['gone-0']);
    assert.deepEqual([...beat.named].sort(), ['alive-3', 'gone-0']);
    assert.deepEqual(ofKind(beat.effects, 'deleteFile'), []);

    while (harness.now < GRACE) beat = heartbeat(harness, () => []);
    assert.deepEqual(ofKind(beat.effects, 'deleteFile'), [], 'the master still has them: kept');

    beat = heartbeat(harness, (named) => named.filter((key) => key.startsWith('gone-')));
    assert.deepEqual(
      ofKind(beat.effects, 'deleteFile').map((effect) => effect.file),
      [disk('gone-0/0-0-0'), disk('gone-0/1-0-1', '/disk2')],
    );
    const removed = ofKind(beat.effects, 'log').filter((line) => line.event === 'worker.leftovers.removed');
    assert.equal(removed.length, 1, 'one line');
    assert.deepEqual(removed[0]!.fields?.applications, ['gone']);
    assert.deepEqual(
      ofKind(beat.effects, 'metric').map((metric) => [metric.name, metric.value]),
      [['LeftoverFilesRemovedCount', 2]],
    );
    // Named no more; the live one stays until its application ends.
    beat = heartbeat(harness, () => []);
    assert.deepEqual(beat.named, ['alive-3']);
    beat = heartbeat(harness, () => ['alive-3']);
    assert.deepEqual(
      ofKind(beat.effects, 'deleteFile').map((effect) => effect.file.id),
      ['alive-3/0-0-0'],
    );
  });

  it('never counts a file it recovered as a leftover; a stray file of that shuffle goes with the shuffle', () => {
    const { recovered, file } = committedRecovery();
    const stray = disk(`${KEY}/5-0-0`);
    const { harness } = started([file, stray], recovered);
    assert.equal(harness.state.shuffles.get(KEY)?.files.size, 1, 'recovered');
    assert.deepEqual([...harness.state.leftovers.get(KEY)!], [stray]);
    harness.now = GRACE;
    const beat = heartbeat(harness, () => [KEY]);
    assert.deepEqual(beat.named, [KEY], 'named once');
    assert.deepEqual(
      ofKind(beat.effects, 'deleteFile')
        .map((effect) => effect.file.id)
        .sort(),
      [file.id, stray.id].sort(),
    );
  });

  it('without graceful shutdown keeps no recovery store: writes none, restores none, its files are leftovers', () => {
    const { recovered, file } = committedRecovery();
    assert.ok(recovered.size > 0, 'a worker with graceful shutdown persisted its commit');
    const harness = new Harness(
      workerMachine,
      initialWorkerState(
        testWorkerConfig(SELF, {
          gracefulShutdown: { enabled: false, checkIntervalMs: 1_000, timeoutMs: 480_000 },
        }),
      ),
    );
    harness.step({ kind: 'start', recovered, leftovers: [file] });
    assert.equal(harness.state.shuffles.size, 0, 'nothing restored');
    assert.deepEqual([...harness.state.leftovers.keys()], [KEY]);
    const register = onlySent(harness.all, 'RegisterWorker');
    harness.receive(
      MASTER,
      { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
      { inReplyTo: register.requestId!, principal: { kind: 'server' } },
    );
    harness.completeIo(
      harness.receive(
        CLIENT,
        {
          type: 'ReserveSlots',
          appId: 'app',
          shuffleId: 2,
          primaries: [location(0, 0, 'PRIMARY', SELF)],
          replicas: [],
          splitThreshold: 1024 ** 3,
          splitMode: 'SOFT',
          memoryEnabled: false,
        },
        { requestId: 1 },
      ),
    );
    const effects = harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 3 });
    assert.deepEqual(
      ofKind([...effects, ...harness.completeIo(effects)], 'persist'),
      [],
      'nothing persisted',
    );
  });

  it('deletes exactly the leftovers of expired shuffles, once, and only after the grace (property)', () => {
    const fileArb = fc.record({
      app: fc.constantFrom('a', 'b', 'c-x'),
      shuffle: fc.nat(3),
      name: fc.constantFrom('0-0-0', '1-0-1', '2-1-0'),
      mountPoint: fc.constantFrom('/disk1', '/disk2'),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(fileArb, { selector: (f) => `${f.app}-${f.shuffle}/${f.name}`, maxLength: 20 }),
        fc.array(fc.subarray(['a', 'b', 'c-x']), { minLength: 1, maxLength: 40 }),
        (files, goneAppsPerBeat) => {
          const found = files.map((f) => disk(`${f.app}-${f.shuffle}/${f.name}`, f.mountPoint));
          // Also what is not a partition file: ignored.
          const { harness } = started([...found, disk('not-a-shuffle-dir'), disk('x/y/z')]);
          const deleted: string[] = [];
          const gone = new Set<string>();
          for (const apps of goneAppsPerBeat) {
            for (const app of apps) gone.add(app);
            const before = harness.now;
            const beat = heartbeat(harness, (named) =>
              named.filter((key) => gone.has(key.slice(0, key.lastIndexOf('-')))),
            );
            const now = ofKind(beat.effects, 'deleteFile').map((effect) => effect.file.id);
            if (before + HEARTBEAT < GRACE) assert.deepEqual(now, [], 'nothing within the grace');
            deleted.push(...now);
          }
          assert.equal(new Set(deleted).size, deleted.length, 'each file deleted once');
          for (const id of deleted)
            assert.ok(
              gone.has(id.slice(0, id.slice(0, id.indexOf('/')).lastIndexOf('-'))),
              "gone.has(id.slice(0, id.slice(0, id.indexOf('/')).lastIndexOf('-')))",
            );
          if (harness.now >= GRACE) {
            const expected = found
              .map((f) => f.id)
              .filter((id) => gone.has(id.slice(0, id.slice(0, id.indexOf('/')).lastIndexOf('-'))));
            assert.deepEqual([...deleted].sort(), expected.sort());
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
