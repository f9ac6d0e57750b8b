// The exact rule for a worker declared lost, as docs/operations.md ("A lost worker") states it, checked against the
// master machine: with T = svc.master.heartbeat.worker.timeout, workers heartbeat every T/4 and the master checks
// every T from its start; a check at c declares lost every worker whose last heartbeat h has c − h > T. A worker
// frozen for D after its last heartbeat is therefore lost exactly when a check falls between h + T and its next
// heartbeat: never when it is frozen for at most 3T/4, always when for more than 2T.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { workerKey, type DiskInfo, type WorkerId } from '../../domain/index.ts';
import { Harness, ofKind } from '../worker/test-kit.ts';
import { initialMasterState, MASTER_TIMERS, masterMachine } from './index.ts';
import { testMasterConfig } from './testing.ts';

const WORKER: WorkerId = { host: 'w1', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const DISKS: DiskInfo[] = [
  {
    mountPoint: '/d1',
    type: 'HDD',
    usableBytes: 2 ** 40,
    totalBytes: 2 ** 40,
    status: 'HEALTHY',
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
  },
];

interface Freeze {
  /** svc.master.heartbeat.worker.timeout, a multiple of 4 ms. */
  readonly timeoutMs: number;
  /** When the worker registers, after the master started (its first check is at T). */
  readonly registeredAt: number;
  /** Heartbeats the worker sends (every T/4) before it is frozen. */
  readonly heartbeats: number;
  /** How long after its last heartbeat the worker is frozen, under T/4. */
  readonly frozenAfterMs: number;
  /** How long it stays frozen (SIGSTOP to SIGCONT); it heartbeats as it resumes. */
  readonly stopMs: number;
}

let requestId = 0;

/** Drives the master through `freeze` (heartbeats and checks in time order) and says whether it declared the worker lost. */
function declaredLost(freeze: Freeze): boolean {
  const { timeoutMs: t, registeredAt, heartbeats, frozenAfterMs, stopMs } = freeze;
  const harness = new Harness(
    masterMachine,
    initialMasterState(testMasterConfig({ workerHeartbeatTimeoutMs: t })),
  );
  harness.start();
  const lastHeartbeat = registeredAt + heartbeats * (t / 4);
  const resumedAt = lastHeartbeat + frozenAfterMs + stopMs;
  const events: { at: number; kind: 'register' | 'heartbeat' | 'check' }[] = [
    { at: registeredAt, kind: 'register' },
    ...Array.from({ length: heartbeats }, (_, k) => ({
      at: registeredAt + (k + 1) * (t / 4),
      kind: 'heartbeat' as const,
    })),
    { at: resumedAt, kind: 'heartbeat' },
  ];
  for (let check = t; check <= resumedAt + t; check += t) events.push({ at: check, kind: 'check' });
  events.sort((a, b) => a.at - b.at);
  let lost = false;
  for (const event of events) {
    harness.now = event.at;
    const effects =
      event.kind === 'check'
        ? harness.timer(MASTER_TIMERS.lostWorkers, event.at)
        : harness.receive(
            workerKey(WORKER),
            event.kind === 'register'
              ? { type: 'RegisterWorker', worker: WORKER, disks: DISKS, networkLocation: '/r1' }
              : {
                  type: 'WorkerHeartbeat',
                  worker: WORKER,
                  disks: DISKS,
                  activeShuffleKeys: [],
                  highWorkload: false,
                  state: 'Normal',
                },
            { requestId: (requestId += 1) },
          );
    if (ofKind(effects, 'log').some((line) => line.event === 'master.worker.lost')) lost = true;
    // Once the resumed heartbeat was answered, later checks see a live worker (or one told to register again).
    if (event.at === resumedAt && event.kind === 'heartbeat') break;
  }
  return lost;
}

const freezes = fc
  .integer({ min: 250, max: 50_000 })
  .chain((quarter) => {
    const t = quarter * 4;
    return fc.record({
      timeoutMs: fc.constant(t),
      registeredAt: fc.integer({ min: 1, max: t - 1 }),
      heartbeats: fc.integer({ min: 0, max: 12 }),
      frozenAfterMs: fc.integer({ min: 0, max: quarter - 1 }),
      stopMs: fc.integer({ min: 0, max: 3 * t }),
    });
  })
  // A check at the very instant of the resumed heartbeat may go either way (whichever the master handles first).
  .filter((f) => {
    const resumedAt = f.registeredAt + f.heartbeats * (f.timeoutMs / 4) + f.frozenAfterMs + f.stopMs;
    return resumedAt % f.timeoutMs !== 0;
  });

describe('master: when a frozen worker is declared lost', () => {
  it('exactly when a check (every T from the start) falls after last heartbeat + T and before the next heartbeat', () => {
    fc.assert(
      fc.property(freezes, (freeze) => {
        const t = freeze.timeoutMs;
        const last = freeze.registeredAt + freeze.heartbeats * (t / 4);
        const resumed = last + freeze.frozenAfterMs + freeze.stopMs;
        const firstCheckPastTimeout = (Math.floor((last + t) / t) + 1) * t;
        assert.equal(declaredLost(freeze), firstCheckPastTimeout < resumed);
      }),
      { numRuns: 300 },
    );
  });

  it('never for a stop of at most 3T/4, always for a stop of more than 2T', () => {
    fc.assert(
      fc.property(freezes, (freeze) => {
        const t = freeze.timeoutMs;
        if (freeze.stopMs <= (3 * t) / 4) assert.equal(declaredLost(freeze), false);
        if (freeze.stopMs > 2 * t) assert.equal(declaredLost(freeze), true);
      }),
      { numRuns: 300 },
    );
  });

  it('the issue’s figures (T = 20 s): a 60 s stop always, a 30 s stop in some phases only, a 15 s stop never', () => {
    const base = { timeoutMs: 20_000, registeredAt: 1_000, heartbeats: 4 } as const;
    for (let after = 0; after < 5_000; after += 250) {
      assert.equal(declaredLost({ ...base, frozenAfterMs: after, stopMs: 60_000 }), true);
      assert.equal(declaredLost({ ...base, frozenAfterMs: after, stopMs: 15_000 }), false);
    }
    // Last heartbeat at 21 s: lost iff the check at 60 s comes before the resume (after 41 s, a check at 40 s does not count).
    assert.equal(declaredLost({ ...base, frozenAfterMs: 0, stopMs: 30_000 }), false); // resumes at 51 s
    assert.equal(declaredLost({ ...base, frozenAfterMs: 4_000, stopMs: 30_000 }), false); // resumes at 55 s
    assert.equal(declaredLost({ ...base, registeredAt: 10_000, frozenAfterMs: 4_000, stopMs: 30_000 }), true); // last 30 s, check 60 s, resumes 64 s
  });
});
