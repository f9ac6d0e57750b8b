import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type { Effect } from '../effects.ts';
import { DISK_CHECK_TIMER } from './disk-health.ts';
import { DRAIN_CHECK_TIMER, DRAIN_DEADLINE_TIMER } from './leaving.ts';
import { initialWorkerState, workerMachine, type WorkerConfig, type WorkerMachineState } from './index.ts';
import { testWorkerConfig } from './testing.ts';
import {
  CLIENT,
  Harness,
  ioOps,
  KEY,
  location,
  metricNames,
  ofKind,
  onlySent,
  pushData,
  recoveryStore,
  SELF,
  commitFiles,
  exitsIn,
} from './test-kit.ts';

/**
 * A graceful shutdown must not lose committed memory files because the only disk is failed at that moment: it waits
 * (bounded by its deadline) for the disk monitor to clear the disk, moves them, and only past the deadline exits
 * without them, loudly and without claiming them in the recovery store.
 */

const MASTER = masterNodeId();
const READER = 'reduce-app-1-0';
const DISK = '/disk1';
const DISK_CHECK_MS = 30_000;
const MEMORY_STORAGE = { type: 'HDD' as const, mountPoint: '', availableTypes: 3 };

function config(timeoutMs: number, diskCheckIntervalMs = DISK_CHECK_MS): WorkerConfig {
  return testWorkerConfig(SELF, {
    disks: [{ mountPoint: DISK, type: 'HDD', capacityBytes: 1024 ** 3 }],
    memory: {
      capacityBytes: 1024 ** 2,
      maxFileBytes: 1024 ** 2,
      evictRatio: 0.9,
      refuseImplicitMemory: false,
    },
    gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs },
    diskCheckIntervalMs,
  });
}

/** A registered worker holding one committed memory file (partition 0-0) whose only disk has failed. */
function committedInMemoryWithFailedDisk(cfg: WorkerConfig): Harness<WorkerMachineState> {
  const h = new Harness(workerMachine, initialWorkerState(cfg));
  const register = onlySent(h.start(), 'RegisterWorker');
  h.receive(
    MASTER,
    { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
    { inReplyTo: register.requestId! },
  );
  h.completeIo(
    h.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', SELF, { storage: MEMORY_STORAGE })],
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: true,
      },
      { requestId: 1 },
    ),
  );
  h.completeIo(h.receive('map-app-1-0-0', pushData(KEY, 0, 0, 'PRIMARY', { size: 32 }), { requestId: 2 }));
  const commit = h.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 3 });
  const answer = onlySent([...commit, ...h.completeIo(commit)], 'CommitFilesResponse').message;
  assert.equal(answer.status, 'SUCCESS');
  assert.equal(answer.committedPrimaries[0]?.storage.type, 'MEMORY');
  // What a failed write to the disk leaves behind (file-queue.ts noteDiskFailure).
  h.state = { ...h.state, diskProblems: new Map([[DISK, 'READ_OR_WRITE_FAILURE' as const]]) };
  return h;
}

/** Whether a worker restarted from `store` serves partition 0-0. */
function servedAfterRestart(cfg: WorkerConfig, store: ReadonlyMap<string, string>): boolean {
  const after = new Harness(workerMachine, initialWorkerState(cfg));
  after.start(store);
  const open = after.receive(
    READER,
    { type: 'OpenStream', shuffleKey: KEY, uniqueId: '0-0', mode: 'PRIMARY' },
    { requestId: 1 },
  );
  return onlySent(open, 'OpenStreamResponse').message.status === 'SUCCESS';
}

function exits(effects: readonly Effect[]): number {
  return exitsIn(effects);
}

function logEvents(effects: readonly Effect[], event: string) {
  return ofKind(effects, 'log').filter((l) => l.event === event);
}

describe('worker: graceful shutdown with committed memory files and a failed disk', () => {
  it('waits for the disk monitor to clear the disk, then moves the file, exits, and serves it after restart', () => {
    const cfg = config(480_000);
    const h = committedInMemoryWithFailedDisk(cfg);
    const leaving = h.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    assert.equal(exits(leaving), 0, 'the file cannot be saved yet: the shutdown waits');
    assert.equal(ofKind(leaving, 'moveFile').length, 0);
    assert.equal(logEvents(leaving, 'worker.graceful.awaitingDisk').length, 1);
    for (const at of [1_000, 2_000, 3_000]) {
      const poll = h.timer(DRAIN_CHECK_TIMER, at);
      assert.equal(exits(poll), 0);
      assert.equal(ofKind(poll, 'moveFile').length, 0);
      assert.equal(logEvents(poll, 'worker.graceful.awaitingDisk').length, 0, 'said once, not at every poll');
    }
    // The probe clears the disk; the move starts at once, and the exit follows it.
    const recovered = h.completeIo(h.timer(DISK_CHECK_TIMER, DISK_CHECK_MS));
    const [move] = ofKind(recovered, 'moveFile');
    assert.equal(move?.to.tier, 'HDD');
    assert.equal(move.to.mountPoint, DISK);
    assert.equal(exits(recovered), 1);
    assert.ok(
      !metricNames(recovered).includes('GracefulShutdownLostFileCount'),
      "!metricNames(recovered).includes('GracefulShutdownLostFileCount')",
    );
    const store = recoveryStore(h.all);
    assert.match([...store.values()].join(), /"tier":"HDD"/);
    assert.ok(servedAfterRestart(cfg, store), 'servedAfterRestart(cfg, store)');
  });

  it('also retries at the graceful poll, without waiting for the disk monitor', () => {
    const cfg = config(480_000);
    const h = committedInMemoryWithFailedDisk(cfg);
    h.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    // The disk became usable by some other way (here: directly), the next poll notices.
    h.state = { ...h.state, diskProblems: new Map() };
    const poll = h.timer(DRAIN_CHECK_TIMER, 1_000);
    const [move] = ofKind(poll, 'moveFile');
    assert.ok(move, 'move');
    assert.equal(exits(h.ioDone(move.op)), 1);
    assert.ok(servedAfterRestart(cfg, recoveryStore(h.all)), 'servedAfterRestart(cfg, recoveryStore(h.all))');
  });

  it('past the deadline exits without the file, says so per file with a metric, and does not claim it', () => {
    const cfg = config(10_000);
    const h = committedInMemoryWithFailedDisk(cfg);
    h.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    const exit = h.timer(DRAIN_DEADLINE_TIMER, 10_000);
    assert.equal(exits(exit), 1);
    const [lost] = logEvents(exit, 'worker.graceful.memoryFileLost');
    assert.equal(lost?.level, 'error');
    assert.equal(lost.fields?.shuffle, KEY);
    assert.equal(lost.fields?.file, '0-0-0');
    const metric = ofKind(exit, 'metric').find((m) => m.name === 'GracefulShutdownLostFileCount');
    assert.equal(metric?.value, 1);
    const store = recoveryStore(h.all);
    assert.equal(store.size, 0, 'the recovery store holds no record of a file the worker no longer has');
    assert.ok(!servedAfterRestart(cfg, store), '!servedAfterRestart(cfg, store)');
  });

  it('saves the file exactly when the disk recovers before the deadline; otherwise reports it lost', () => {
    const checkMs = 10_000;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 90 }),
        (recoversAtCheck, timeoutSeconds) => {
          // Half a second off the check grid: a deadline and a probe never fall on the same instant.
          const timeoutMs = timeoutSeconds * 1_000 + 500;
          const cfg = config(timeoutMs, checkMs);
          const h = committedInMemoryWithFailedDisk(cfg);
          h.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
          let exited = 0;
          const events = [
            ...Array.from({ length: recoversAtCheck }, (_, i) => ({
              at: (i + 1) * checkMs,
              deadline: false,
            })),
            { at: timeoutMs, deadline: true },
          ].sort((a, b) => a.at - b.at);
          for (const event of events) {
            if (exited > 0) break;
            if (event.deadline) {
              exited += exits(h.timer(DRAIN_DEADLINE_TIMER, event.at));
              continue;
            }
            const probe = h.timer(DISK_CHECK_TIMER, event.at);
            if (event.at < recoversAtCheck * checkMs) {
              exited += exits(h.ioFailed(ioOps(probe)[0]!.op));
            } else {
              exited += exits(h.completeIo(probe));
            }
          }
          assert.equal(exited, 1, 'the worker exits exactly once');
          const saved = recoversAtCheck * checkMs < timeoutMs;
          const lostMetric = ofKind(h.all, 'metric').filter(
            (m) => m.name === 'GracefulShutdownLostFileCount',
          );
          assert.equal(lostMetric.length, saved ? 0 : 1);
          assert.equal(servedAfterRestart(cfg, recoveryStore(h.all)), saved);
        },
      ),
      { numRuns: 100 },
    );
  });
});
