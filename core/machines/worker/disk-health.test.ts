import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Effect } from '../effects.ts';
import { DISK_CHECK_TIMER } from './disk-health.ts';
import { initialWorkerState, type WorkerMachineState } from './state.ts';
import { storageView } from './storage-view.ts';
import { Harness, ioOps, ofKind, workerId } from './test-kit.ts';
import { testWorkerConfig } from './testing.ts';
import { workerMachine } from './machine.ts';

const INTERVAL = 30_000;

/** A started worker whose `/disk1` was marked failed by an earlier I/O error. */
function workerWithFailedDisk(
  diskCheckIntervalMs: number | undefined = INTERVAL,
): Harness<WorkerMachineState> {
  const config = testWorkerConfig(
    workerId('w1'),
    diskCheckIntervalMs === undefined ? {} : { diskCheckIntervalMs },
  );
  const h = new Harness(workerMachine, initialWorkerState(config));
  h.start();
  h.state = { ...h.state, diskProblems: new Map([['/disk1', 'READ_OR_WRITE_FAILURE' as const]]) };
  return h;
}

const disk1 = (h: Harness<WorkerMachineState>) =>
  storageView(h.state).disks.find((d) => d.mountPoint === '/disk1')!.status;

function timers(effects: readonly Effect[]): string[] {
  return ofKind(effects, 'setTimer').map((t) => t.name);
}

describe('worker disk monitor', () => {
  it('arms its check at start only when the monitor is on', () => {
    const on = new Harness(
      workerMachine,
      initialWorkerState(testWorkerConfig(workerId('w1'), { diskCheckIntervalMs: INTERVAL })),
    );
    assert.ok(timers(on.start()).includes(DISK_CHECK_TIMER), 'timers(on.start()).includes(DISK_CHECK_TIMER)');
    const off = new Harness(workerMachine, initialWorkerState(testWorkerConfig(workerId('w1'))));
    assert.ok(
      !timers(off.start()).includes(DISK_CHECK_TIMER),
      '!timers(off.start()).includes(DISK_CHECK_TIMER)',
    );
  });

  it('returns a failed disk to HEALTHY once a probe succeeds, and re-arms the check', () => {
    const h = workerWithFailedDisk();
    const effects = h.timer(DISK_CHECK_TIMER, INTERVAL);
    assert.ok(timers(effects).includes(DISK_CHECK_TIMER), 'timers(effects).includes(DISK_CHECK_TIMER)');
    // Only the failed disk is probed.
    assert.deepEqual(
      ioOps(effects).map((e) => [e.kind, e.file.mountPoint]),
      [['createFile', '/disk1']],
    );
    assert.equal(disk1(h), 'READ_OR_WRITE_FAILURE');
    const rest = h.completeIo(effects);
    assert.deepEqual(
      ioOps(rest).map((e) => e.kind),
      ['write', 'flush'],
    );
    assert.equal(disk1(h), 'HEALTHY');
    assert.ok(ofKind(rest, 'deleteFile').length > 0, 'the probe file is removed');
  });

  it('keeps the disk failed when any probe step fails, and tries again at the next check', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 }), (failingStep) => {
        const h = workerWithFailedDisk();
        let pending = ioOps(h.timer(DISK_CHECK_TIMER, INTERVAL));
        for (let step = 0; step < failingStep; step += 1) pending = ioOps(h.ioDone(pending[0]!.op));
        h.ioFailed(pending[0]!.op);
        assert.equal(disk1(h), 'READ_OR_WRITE_FAILURE');
        const again = h.timer(DISK_CHECK_TIMER, 2 * INTERVAL);
        h.completeIo(again);
        assert.equal(disk1(h), 'HEALTHY');
      }),
      { numRuns: 20 },
    );
  });

  it('probes nothing when no disk has failed', () => {
    const h = new Harness(
      workerMachine,
      initialWorkerState(testWorkerConfig(workerId('w1'), { diskCheckIntervalMs: INTERVAL })),
    );
    h.start();
    assert.deepEqual(ioOps(h.timer(DISK_CHECK_TIMER, INTERVAL)), []);
  });
});
