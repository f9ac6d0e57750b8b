import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { streamRng } from '../world/random.ts';
import {
  CALM_KNOBS,
  DISK_FAULTS,
  TASK_KINDS,
  WORKER_EVENTS,
  drawSchedule,
  faultEnd,
  calmFrom,
  checkScheduleTargets,
  formatFaults,
  formatKnobs,
  parseFaults,
  parseKnobs,
  type Fault,
  type FaultTargets,
  type Knobs,
  type Schedule,
} from './plan.ts';
import { shrinkSchedule } from './shrink.ts';

const token = fc.constantFrom('w0', 'w1', 'w12', 'm0', 'a3');
const time = fc.nat(1_000_000);
export const faultArb: fc.Arbitrary<Fault> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('crash' as const, 'graceful' as const),
    at: time,
    target: token,
    downFor: time,
  }),
  fc.record({ kind: fc.constant('exclude' as const), at: time, target: token, duration: time }),
  fc.record({
    kind: fc.constant('partition' as const),
    at: time,
    targets: fc.array(token, { minLength: 1, maxLength: 4 }),
    duration: time,
  }),
  fc.record({
    kind: fc.constant('partition' as const),
    at: time,
    targets: fc.constant(['w0', 'a3.driver']),
    otherSide: fc.array(fc.constantFrom('w1', 'm0', 'a3.executors'), { minLength: 1, maxLength: 3 }),
    duration: time,
  }),
  fc.record({
    kind: fc.constant('event' as const),
    at: time,
    target: token,
    event: fc.constantFrom(...WORKER_EVENTS),
    duration: time,
  }),
  fc.record({
    kind: fc.constant('disk' as const),
    at: time,
    target: token,
    mount: fc.constantFrom('/mnt/disk0', '/data/ssd-1'),
    fault: fc.constantFrom(...DISK_FAULTS),
    duration: time,
  }),
  fc.record({
    kind: fc.constant('kill' as const),
    at: time,
    target: token,
    task: fc.constantFrom(...TASK_KINDS),
  }),
  fc.record({
    kind: fc.constant('dfs' as const),
    at: time,
    fault: fc.constantFrom(...DISK_FAULTS),
    duration: time,
  }),
  fc.record({ kind: fc.constant('descriptors' as const), at: time, target: token, duration: time }),
  fc
    .record({
      kind: fc.constant('oneway' as const),
      at: time,
      from: fc.uniqueArray(fc.constantFrom('w0', 'm0', 'a3.driver'), { maxLength: 3 }),
      to: fc.uniqueArray(fc.constantFrom('w1', 'w12', 'a3.executors'), { maxLength: 3 }),
      duration: time,
    })
    .filter((fault) => fault.from.length + fault.to.length > 0),
);

const knobsArb: fc.Arbitrary<Knobs> = fc.record({
  stormMs: fc.nat(200_000),
  latencyMs: fc.double({ min: 0, max: 10, noNaN: true }),
  jitterMs: fc.double({ min: 0, max: 10, noNaN: true }),
  drop: fc.double({ min: 0, max: 1, noNaN: true }),
  duplicate: fc.double({ min: 0, max: 1, noNaN: true }),
  reorder: fc.double({ min: 0, max: 1, noNaN: true }),
  ioError: fc.double({ min: 0, max: 1, noNaN: true }),
  noSpace: fc.double({ min: 0, max: 1, noNaN: true }),
});

const targets: FaultTargets = {
  workers: [
    { token: 'w0', mounts: ['/mnt/disk0'] },
    { token: 'w1', mounts: ['/mnt/disk0', '/mnt/disk1'] },
    { token: 'w2', mounts: [] },
  ],
  masters: ['m0'],
  apps: ['a0', 'a1'],
  dfs: true,
};

describe('fault schedules', () => {
  it('print and parse back to the same faults and knobs (the replay command depends on it)', () => {
    fc.assert(
      fc.property(fc.array(faultArb, { maxLength: 8 }), knobsArb, (faults, knobs) => {
        // fc.record builds objects without a prototype; compare plain copies.
        assert.deepEqual(
          parseFaults(formatFaults(faults)),
          faults.map((fault) => ({ ...fault })),
        );
        assert.deepEqual(parseKnobs(formatKnobs(knobs)), { ...knobs });
      }),
      { numRuns: 200 },
    );
  });

  it('say what is wrong with a malformed schedule', () => {
    assert.throws(
      () => parseFaults('crash w3'),
      /'crash w3' is not a fault; expected kind\(args\)@atMs\+durationMs/,
    );
    assert.throws(() => parseFaults('explode(w1)@1+2'), /unknown fault kind 'explode'/);
    assert.throws(() => parseFaults('disk(w1,/d,melted)@1+2'), /fault one of write-errors, read-errors/);
    assert.throws(() => parseFaults('crash(w1,w2)@1+2'), /crash takes exactly one target/);
    assert.throws(() => parseFaults('kill(a0,driver)@1+0'), /kill\(app,task\) with task one of map, reduce/);
    assert.throws(
      () => parseFaults('dfs(w1,full)@1+2'),
      /expected dfs\(fault\) with fault one of write-errors/,
    );
    assert.throws(
      () => parseFaults('partition(w1|)@1+2'),
      /expected partition\(groups\) or partition\(groups\|groups\)/,
    );
    assert.throws(() => parseFaults('partition(w1|w2|w3)@1+2'), /expected partition\(groups\)/);
    assert.throws(() => parseFaults('partition(w1,w2|w2)@1+2'), /w2 cannot be on both sides of a partition/);
    assert.throws(() => parseFaults('partition(a0.driver|a0)@1+2'), /a0.driver cannot be on both sides/);
    assert.throws(() => parseFaults('partition(a0|w1,a0.executors)@1+2'), /a0 cannot be on both sides/);
    assert.equal(parseFaults('partition(a0.driver|a1.executors,a10)@1+2').length, 1);
    assert.throws(() => parseKnobs('storm=-1'), /knob storm needs a non-negative number, got '-1'/);
    assert.throws(() => parseKnobs('loss=0.1'), /'loss' is not a knob; expected one of storm, latency/);
    assert.deepEqual(parseKnobs('drop=0.5'), { ...CALM_KNOBS, drop: 0.5 });
  });

  it('are drawn from the seed alone, aim only at existing targets, and start inside the storm', () => {
    fc.assert(
      fc.property(fc.nat(), (seed) => {
        const schedule = drawSchedule(streamRng(seed, 'faults'), targets);
        assert.deepEqual(drawSchedule(streamRng(seed, 'faults'), targets), schedule);
        checkScheduleTargets(schedule.faults, targets);
        for (const fault of schedule.faults) {
          assert.ok(fault.at < schedule.knobs.stormMs, 'fault.at < schedule.knobs.stormMs');
          assert.ok(calmFrom(schedule) >= faultEnd(fault), 'calmFrom(schedule) >= faultEnd(fault)');
        }
      }),
      { numRuns: 200 },
    );
  });

  it('refuse, before a replay, a target this seed’s cluster does not have, naming what it has', () => {
    const check = (text: string) => () => checkScheduleTargets(parseFaults(text), targets);
    assert.doesNotThrow(
      check('crash(m0)@1+2; disk(w1,/mnt/disk1,full)@1+2; partition(w0,a1|a0.driver)@1+2; dfs(slow)@1+2'),
    );
    assert.throws(
      check('crash(w7)@1+2'),
      /no worker or master w7; this seed's cluster has workers w0, w1, w2, masters m0, applications a0, a1/,
    );
    assert.throws(check('crash(m1)@1+2'), /no worker or master m1/);
    assert.throws(
      check('disk(w2,/mnt/disk0,full)@1+2'),
      /worker w2 has no disk \/mnt\/disk0 \(it has none\)/,
    );
    assert.throws(check('partition(w0|a2.executors)@1+2'), /no group a2.executors to partition/);
    assert.throws(check('kill(a4,map)@1+0'), /no application a4/);
    assert.throws(
      () => checkScheduleTargets(parseFaults('dfs(full)@1+2'), { ...targets, dfs: false }),
      /no distributed filesystem/,
    );
  });

  it('draw partitions with two sides, or a driver cut from its executors, after every other fault', () => {
    const shapes = new Set<string>();
    // (Descriptors faults and one-way partitions are drawn after the partitions' sides, so they are left out here.)
    const noDescriptors = { ...targets, descriptorFaults: false, oneWayPartitions: false };
    for (let seed = 0; seed < 400; seed += 1) {
      const sided = drawSchedule(streamRng(seed, 'faults'), noDescriptors);
      const oneSided = drawSchedule(streamRng(seed, 'faults'), { ...noDescriptors, partitionSides: false });
      // Everything but the partitions' sides is what the seed drew before sides existed.
      const plain = (faults: readonly Fault[]) =>
        faults.map((fault) =>
          fault.kind === 'partition' ? { ...fault, targets: [], otherSide: [] } : fault,
        );
      assert.deepEqual(plain(sided.faults), plain(oneSided.faults), `seed ${seed}`);
      assert.ok(
        oneSided.faults.every((fault) => fault.kind !== 'partition' || fault.otherSide === undefined),
        "oneSided.faults.every((fault) => fault.kind !== 'partition' || fault.otherSide === undefined)",
      );
      for (const fault of sided.faults) {
        if (fault.kind !== 'partition') continue;
        checkScheduleTargets([fault], targets);
        const other = fault.otherSide ?? [];
        assert.ok(!fault.targets.some((group) => other.includes(group)), formatFaults([fault]));
        shapes.add(
          other.length === 0
            ? 'against the rest'
            : fault.targets[0]!.endsWith('.driver')
              ? 'driver | executors'
              : 'two sides',
        );
      }
    }
    assert.deepEqual([...shapes].sort(), ['against the rest', 'driver | executors', 'two sides']);
  });

  it('never draw a fault at the last instant of the storm (seeds that once rounded up onto it)', () => {
    for (const seed of [31149, 32646, 45425]) {
      const schedule = drawSchedule(streamRng(seed, 'faults'), targets);
      for (const fault of schedule.faults) {
        assert.ok(fault.at < schedule.knobs.stormMs, `seed ${seed}: ${formatFaults([fault])}`);
      }
    }
  });

  it('make the DFS fail only when there is one, and add its faults after every other kind', () => {
    const kinds = new Set<string>();
    for (let seed = 0; seed < 300; seed += 1) {
      // (Partitions' sides, descriptors faults and one-way partitions are drawn after the DFS's faults, so they are
      // left out here.)
      const oneSided = {
        ...targets,
        partitionSides: false,
        descriptorFaults: false,
        oneWayPartitions: false,
      };
      const withDfs = drawSchedule(streamRng(seed, 'faults'), oneSided);
      const without = drawSchedule(streamRng(seed, 'faults'), { ...oneSided, dfs: false });
      const switchedOff = drawSchedule(streamRng(seed, 'faults'), { ...oneSided, dfsFaults: false });
      assert.ok(!without.faults.some((fault) => fault.kind === 'dfs'), `seed ${seed}`);
      assert.deepEqual(switchedOff, without);
      // The same seed with a DFS draws the same other faults: older seeds keep their schedules.
      assert.deepEqual(
        withDfs.faults.filter((fault) => fault.kind !== 'dfs'),
        without.faults,
      );
      for (const fault of withDfs.faults) if (fault.kind === 'dfs') kinds.add(fault.fault);
    }
    assert.deepEqual(
      [...kinds].sort(),
      [...DISK_FAULTS].sort(),
      'every disk fault strikes the DFS in some seed',
    );
  });

  it('run a worker out of file descriptors now and then, drawn after every other fault', () => {
    let drawn = 0;
    for (let seed = 0; seed < 300; seed += 1) {
      // (One-way partitions are drawn after them, so they are left out here.)
      const twoWay = { ...targets, oneWayPartitions: false };
      const withDescriptors = drawSchedule(streamRng(seed, 'faults'), twoWay);
      const without = drawSchedule(streamRng(seed, 'faults'), { ...twoWay, descriptorFaults: false });
      // Without them a seed draws what it drew before they existed (swarm-before-policies replays old seeds so).
      assert.deepEqual(
        withDescriptors.faults.filter((fault) => fault.kind !== 'descriptors'),
        without.faults,
        `seed ${seed}`,
      );
      for (const fault of withDescriptors.faults) {
        if (fault.kind !== 'descriptors') continue;
        drawn += 1;
        checkScheduleTargets([fault], targets);
        assert.ok(fault.at < withDescriptors.knobs.stormMs && fault.duration > 0, formatFaults([fault]));
      }
    }
    assert.ok(drawn > 0, 'some seeds run a worker out of descriptors');
    assert.deepEqual(parseFaults('descriptors(w1)@300+4000'), [
      { kind: 'descriptors', at: 300, target: 'w1', duration: 4000 },
    ]);
    assert.throws(() => checkScheduleTargets(parseFaults('descriptors(m0)@1+2'), targets), /no worker m0/);
  });

  it('cut links one way now and then, drawn after every other fault', () => {
    const shapes = new Set<string>();
    for (let seed = 0; seed < 300; seed += 1) {
      const withOneWay = drawSchedule(streamRng(seed, 'faults'), targets);
      const without = drawSchedule(streamRng(seed, 'faults'), { ...targets, oneWayPartitions: false });
      // Without them a seed draws what it drew before they existed (swarm-before-policies replays old seeds so).
      assert.deepEqual(
        withOneWay.faults.filter((fault) => fault.kind !== 'oneway'),
        without.faults,
        `seed ${seed}`,
      );
      for (const fault of withOneWay.faults) {
        if (fault.kind !== 'oneway') continue;
        checkScheduleTargets([fault], targets);
        assert.ok(fault.at < withOneWay.knobs.stormMs && fault.duration > 0, formatFaults([fault]));
        assert.ok(!fault.from.some((group) => fault.to.includes(group)), formatFaults([fault]));
        shapes.add(fault.to.length === 0 ? 'mute' : fault.from.length === 0 ? 'deaf' : 'between groups');
      }
    }
    assert.deepEqual([...shapes].sort(), ['between groups', 'deaf', 'mute']);
    assert.deepEqual(parseFaults('oneway(w1,a0>m0)@300+4000; oneway(>w2)@5+6'), [
      { kind: 'oneway', at: 300, from: ['w1', 'a0'], to: ['m0'], duration: 4000 },
      { kind: 'oneway', at: 5, from: [], to: ['w2'], duration: 6 },
    ]);
    assert.throws(() => parseFaults('oneway(>)@1+2'), /expected oneway\(groups>groups\)/);
    assert.throws(() => parseFaults('oneway(w1>a0,w1)@1+2'), /w1 cannot be on both sides/);
    assert.throws(() => checkScheduleTargets(parseFaults('oneway(w9>)@1+2'), targets), /no group w9/);
  });

  it('vary from calm to storm across seeds (swarm testing)', () => {
    const sizes = [...Array(200).keys()].map(
      (seed) => drawSchedule(streamRng(seed, 'faults'), targets).faults.length,
    );
    assert.ok(sizes.includes(0), 'some seeds are calm');
    assert.ok(Math.max(...sizes) >= 5, 'some seeds are storms');
  });
});

describe('shrinkSchedule', () => {
  it('finds the minimal schedule that still fails, through fast-check’s shrinker', () => {
    fc.assert(
      fc.property(fc.array(faultArb, { maxLength: 12 }), knobsArb, (noise, knobs) => {
        const culprit: Fault = { kind: 'crash', at: 500, target: 'w9', downFor: 1000 };
        const failing: Schedule = { knobs: { ...knobs, drop: 0.3 }, faults: [...noise, culprit] };
        // The "bug": a crash of w9 that lasts at least 100 ms while messages are being dropped.
        const fails = (s: Schedule) =>
          s.knobs.drop > 0 &&
          s.faults.some((f) => f.kind === 'crash' && f.target === 'w9' && f.downFor >= 100);
        const { schedule, runs } = shrinkSchedule(failing, fails);
        assert.ok(fails(schedule), 'fails(schedule)');
        assert.equal(schedule.faults.length, 1);
        assert.deepEqual({ ...schedule.faults[0], downFor: 0 }, { ...culprit, downFor: 0 });
        assert.ok(
          schedule.faults[0]?.kind === 'crash' && schedule.faults[0].downFor < 200,
          "schedule.faults[0]?.kind === 'crash' && schedule.faults[0].downFor < 200",
        );
        for (const key of ['duplicate', 'reorder', 'ioError', 'noSpace', 'jitterMs'] as const) {
          assert.equal(schedule.knobs[key], 0, key);
        }
        assert.ok(runs <= 400, 'runs <= 400');
      }),
      { numRuns: 30 },
    );
  });

  it('stops after its run budget and returns the best schedule so far', () => {
    const failing = {
      knobs: CALM_KNOBS,
      faults: [...Array(20).keys()].map((i): Fault => ({
        kind: 'exclude',
        at: i,
        target: 'w0',
        duration: 10,
      })),
    };
    const { schedule, runs } = shrinkSchedule(failing, () => true, { maxRuns: 3 });
    assert.equal(runs, 3);
    assert.ok(schedule.faults.length < 20, 'schedule.faults.length < 20');
  });
});
