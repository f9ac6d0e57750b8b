// The chaos soak's fault schedule: reproducible from its seed, and never more faults at once than tolerated.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  defaultFaultKinds,
  FAULT_KINDS,
  faultSchedule,
  HOST_FAULT_KINDS,
  LEADER_FAULT_KINDS,
  LOOPBACK_FAULT_KINDS,
  MASTER_FAULTS,
  unsupportedKinds,
  parseFaultKinds,
  struckWorkers,
  toleratedFaults,
  type FaultKind,
  type ScheduleOptions,
  type ScheduledFault,
} from './schedule.ts';

const common = {
  seed: fc.string({ maxLength: 12 }),
  durationMs: fc.integer({ min: 10_000, max: 20 * 60_000 }),
  workers: fc.integer({ min: 1, max: 7 }),
  replicas: fc.constantFrom(1 as const, 2 as const),
  heartbeatTimeoutMs: fc.integer({ min: 2_000, max: 60_000 }),
};
/** Options on loopback (fault proxies) or on namespace hosts, each with kinds its cluster can take. */
const options = fc.oneof(
  fc.record({
    ...common,
    hosts: fc.constant(false),
    kinds: fc.uniqueArray(fc.constantFrom(...LOOPBACK_FAULT_KINDS), { minLength: 1 }),
  }),
  fc.record({
    ...common,
    hosts: fc.constant(true),
    kinds: fc.uniqueArray(fc.constantFrom(...defaultFaultKinds(true)), { minLength: 1 }),
  }),
  fc.record({
    ...common,
    hosts: fc.constant(true),
    ha: fc.constant(true),
    kinds: fc.uniqueArray(fc.constantFrom(...defaultFaultKinds(true, true)), { minLength: 1 }),
  }),
);

/** The most faults running at one instant, and the faults striking the same target while overlapping. */
function overlaps(faults: readonly ScheduledFault[]): { most: number; sameTarget: string[] } {
  let most = 0;
  const sameTarget: string[] = [];
  for (const fault of faults) {
    const running = faults.filter((f) => f.atMs <= fault.atMs && fault.atMs < f.atMs + Math.max(f.holdMs, 1));
    most = Math.max(most, running.length);
    for (const other of running) {
      if (other === fault) continue;
      const shared = struckWorkers(other).some((w) => struckWorkers(fault).includes(w));
      if (shared || other.worker === undefined || fault.worker === undefined)
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
          assert.ok(
            (o.kinds as readonly FaultKind[]).includes(fault.kind),
            `${fault.kind} was not asked for`,
          );
          assert.ok(fault.atMs < o.durationMs, 'fault.atMs < o.durationMs');
          if (fault.worker !== undefined)
            assert.ok(
              fault.worker >= 0 && fault.worker < o.workers,
              'fault.worker >= 0 && fault.worker < o.workers',
            );
          assert.equal(fault.worker === undefined, MASTER_FAULTS.has(fault.kind));
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

  it('draws a host network’s faults on namespace hosts, each replayable from the seed', () => {
    const base: ScheduleOptions = {
      seed: 'ci-hosts-1',
      durationMs: 10 * 60_000,
      workers: 3,
      replicas: 2,
      heartbeatTimeoutMs: 10_000,
      hosts: true,
    };
    const faults = faultSchedule(base);
    assert.deepEqual(faults, faultSchedule({ ...base }), 'the same seed draws the same schedule');
    const drawn = new Set(faults.map((fault) => fault.kind));
    for (const kind of [...HOST_FAULT_KINDS, 'kill', 'stop-short'] as const)
      assert.ok(drawn.has(kind), `${kind} drawn in ten minutes: ${[...drawn].join(', ')}`);
    for (const kind of ['latency', 'stall', 'one-way-stall', 'cut'] as const)
      assert.ok(!drawn.has(kind), `${kind} needs the fault proxies a cluster on hosts has not`);
    const oneWay = faults.filter((fault) => fault.kind === 'one-way-partition');
    assert.ok(
      oneWay.every((fault) => fault.drop === 'from-worker' || fault.drop === 'to-worker'),
      'a one-way partition drops one direction',
    );
    for (const rack of faults.filter((fault) => fault.kind === 'rack-partition')) {
      const group = rack.rack ?? [];
      assert.ok(group.length >= 1 && group.length < base.workers, `rack ${JSON.stringify(group)}`);
      assert.ok(group.includes(rack.worker!), 'the fault’s worker is in its rack');
      assert.deepEqual(struckWorkers(rack), group);
    }
    for (const fault of faults.filter((f) => HOST_FAULT_KINDS.includes(f.kind as never)))
      assert.ok(fault.holdMs >= 1_000 && fault.holdMs <= 25_000, `hold ${fault.holdMs}`);
  });

  it('draws racks of every size that leaves the master a worker, both one-way directions', () => {
    const racks = new Set<number>();
    const drops = new Set<string>();
    for (let seed = 0; seed < 20; seed += 1) {
      for (const fault of faultSchedule({
        seed: String(seed),
        durationMs: 10 * 60_000,
        workers: 4,
        replicas: 2,
        heartbeatTimeoutMs: 10_000,
        hosts: true,
        kinds: ['rack-partition', 'one-way-partition'],
      })) {
        if (fault.rack !== undefined) racks.add(fault.rack.length);
        if (fault.drop !== undefined) drops.add(fault.drop);
      }
    }
    assert.deepEqual([...racks].sort(), [1, 2, 3]);
    assert.deepEqual([...drops].sort(), ['from-worker', 'to-worker']);
  });

  it('keeps the loopback schedules as they were, and refuses kinds the cluster cannot take', () => {
    const base: ScheduleOptions = {
      seed: 'ci-1',
      durationMs: 120_000,
      workers: 3,
      replicas: 2,
      heartbeatTimeoutMs: 10_000,
    };
    // ci-1's schedule as drawn before the hosts' kinds existed: a seed replays what it replayed then.
    assert.deepEqual(
      faultSchedule(base).map((fault) => `${fault.kind}@${fault.worker ?? 'master'}`),
      [
        'one-way-stall@2',
        'kill@2',
        'disk-removed@1',
        'stop-past@0',
        'one-way-stall@2',
        'decommission@0',
        'cut@2',
        'restart-graceful@2',
        'restart-graceful@1',
        'disk-removed@2',
        'latency@2',
      ],
      'the loopback schedule of ci-1',
    );
    assert.throws(() => faultSchedule({ ...base, kinds: ['link-cut'] }), /link-cut needs namespace hosts/);
    assert.throws(
      () => faultSchedule({ ...base, hosts: true, kinds: ['stall'] }),
      /stall needs fault proxies/,
    );
    assert.equal(
      FAULT_KINDS.length,
      LOOPBACK_FAULT_KINDS.length + HOST_FAULT_KINDS.length + LEADER_FAULT_KINDS.length,
      'every kind listed once',
    );
  });

  it('draws the leader’s faults for a group of masters, in place of master-restart', () => {
    const base: ScheduleOptions = {
      seed: 'ci-hosts-ha-1',
      durationMs: 10 * 60_000,
      workers: 3,
      replicas: 2,
      heartbeatTimeoutMs: 10_000,
      hosts: true,
      ha: true,
    };
    const drawn = new Set(faultSchedule(base).map((fault) => fault.kind));
    for (const kind of LEADER_FAULT_KINDS) assert.ok(drawn.has(kind), `${kind} drawn in ten minutes`);
    assert.ok(!drawn.has('master-restart'), 'a group has no single master to restart');
    assert.deepEqual(
      defaultFaultKinds(false, true).filter((kind) => LEADER_FAULT_KINDS.includes(kind as never)),
      ['leader-kill', 'leader-freeze'],
      'on loopback no partition of the leader',
    );
    // The kinds of a single master keep their places: its seeds replay the schedules they had.
    assert.deepEqual(defaultFaultKinds(true), [
      ...LOOPBACK_FAULT_KINDS.filter((kind) => !['latency', 'stall', 'one-way-stall', 'cut'].includes(kind)),
      ...HOST_FAULT_KINDS,
    ]);
    assert.match(unsupportedKinds(['leader-kill'], true) ?? '', /needs a group of masters \(--ha\)/);
    assert.match(unsupportedKinds(['leader-partition'], false, true) ?? '', /needs namespace hosts/);
    assert.match(unsupportedKinds(['master-restart'], true, true) ?? '', /leader-kill instead/);
    assert.equal(unsupportedKinds(defaultFaultKinds(true, true), true, true), undefined);
  });

  it('parses a list of fault kinds and names the unknown ones', () => {
    assert.deepEqual(parseFaultKinds('kill, stall'), ['kill', 'stall']);
    assert.throws(() => parseFaultKinds('kill,meteor'), /unknown fault kind\(s\) meteor/);
  });
});
