// The chaos soak's fault schedule: reproducible from its seed, and never more faults at once than tolerated.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  FAULT_KINDS,
  faultSchedule,
  parseFaultKinds,
  toleratedFaults,
  type ScheduleOptions,
  type ScheduledFault,
} from './schedule.ts';

const options = fc.record({
  seed: fc.string({ maxLength: 12 }),
  durationMs: fc.integer({ min: 10_000, max: 20 * 60_000 }),
  workers: fc.integer({ min: 1, max: 7 }),
  replicas: fc.constantFrom(1 as const, 2 as const),
  heartbeatTimeoutMs: fc.integer({ min: 2_000, max: 60_000 }),
  kinds: fc.uniqueArray(fc.constantFrom(...FAULT_KINDS), { minLength: 1 }),
});

/** The most faults running at one instant, and the faults striking the same target while overlapping. */
function overlaps(faults: readonly ScheduledFault[]): { most: number; sameTarget: string[] } {
  let most = 0;
  const sameTarget: string[] = [];
  for (const fault of faults) {
    const running = faults.filter((f) => f.atMs <= fault.atMs && fault.atMs < f.atMs + Math.max(f.holdMs, 1));
    most = Math.max(most, running.length);
    for (const other of running) {
      if (other === fault) continue;
      if (other.worker === fault.worker || other.worker === undefined || fault.worker === undefined)
        sameTarget.push(`${other.index}/${fault.index}`);
    }
  }
  return { most, sameTarget };
}

describe('the chaos fault schedule', () => {
  it('is the same for the same seed and options', () => {
    fc.assert(
      fc.property(options, (o) => {
        assert.deepEqual(faultSchedule(o), faultSchedule({ ...o }));
      }),
    );
  });

  it('depends on the seed', () => {
    const base: ScheduleOptions = {
      seed: 'a',
      durationMs: 600_000,
      workers: 3,
      replicas: 2,
      heartbeatTimeoutMs: 10_000,
    };
    assert.notDeepEqual(faultSchedule(base), faultSchedule({ ...base, seed: 'b' }));
  });

  it('never runs more faults at once than the cluster tolerates, nor two on one target', () => {
    fc.assert(
      fc.property(options, (o) => {
        const faults = faultSchedule(o);
        const { most, sameTarget } = overlaps(faults);
        assert.ok(most <= toleratedFaults(o.workers, o.replicas), `${most} faults at once`);
        assert.deepEqual(sameTarget, []);
        for (const fault of faults) {
          assert.ok(o.kinds.includes(fault.kind), `${fault.kind} was not asked for`);
          assert.ok(fault.atMs < o.durationMs, 'fault.atMs < o.durationMs');
          if (fault.worker !== undefined)
            assert.ok(
              fault.worker >= 0 && fault.worker < o.workers,
              'fault.worker >= 0 && fault.worker < o.workers',
            );
          assert.equal(fault.worker === undefined, fault.kind === 'master-restart');
        }
      }),
    );
  });

  it('stops a worker short of the heartbeat timeout or past it, as named', () => {
    fc.assert(
      fc.property(options, (o) => {
        for (const fault of faultSchedule({ ...o, kinds: ['stop-short', 'stop-past'] })) {
          if (fault.kind === 'stop-short')
            assert.ok(fault.holdMs < o.heartbeatTimeoutMs, 'fault.holdMs < o.heartbeatTimeoutMs');
          else assert.ok(fault.holdMs > o.heartbeatTimeoutMs, 'fault.holdMs > o.heartbeatTimeoutMs');
        }
      }),
    );
  });

  it('tolerates one fault at a time with replication and three workers, none without spare copies', () => {
    assert.equal(toleratedFaults(3, 2), 1);
    assert.equal(toleratedFaults(6, 2), 1);
    assert.equal(toleratedFaults(2, 2), 0);
    assert.equal(toleratedFaults(5, 1), 0);
    const base: ScheduleOptions = {
      seed: 's',
      durationMs: 600_000,
      workers: 3,
      replicas: 2,
      heartbeatTimeoutMs: 10_000,
    };
    assert.ok(faultSchedule(base).length > 10, 'faultSchedule(base).length > 10');
    assert.deepEqual(faultSchedule({ ...base, workers: 2 }), []);
    assert.deepEqual(faultSchedule({ ...base, replicas: 1 }), []);
  });

  it('parses a list of fault kinds and names the unknown ones', () => {
    assert.deepEqual(parseFaultKinds('kill, stall'), ['kill', 'stall']);
    assert.throws(() => parseFaultKinds('kill,meteor'), /unknown fault kind\(s\) meteor/);
  });
});
