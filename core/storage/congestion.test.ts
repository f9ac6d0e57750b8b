import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  assessCongestion,
  congestedUsers,
  emptyCongestion,
  isUserCongested,
  isWorkerCongested,
  meterSpeed,
  noteCongestedReply,
  recordConsumed,
  recordProduced,
  type CongestionConfig,
  type CongestionEvent,
  type CongestionState,
} from './congestion.ts';

const UNLIMITED = { low: Infinity, high: Infinity };

function config(overrides: Partial<CongestionConfig> = {}): CongestionConfig {
  return {
    diskBuffer: UNLIMITED,
    userProduceSpeed: UNLIMITED,
    workerProduceSpeed: UNLIMITED,
    sampleWindowMs: 1_000,
    checkIntervalMs: 10,
    ...overrides,
  };
}

const USERS = ['a', 'b', 'c', 'd'];

/** One tick of a random workload: some users push, the disks write some, then the check runs. */
const tickArb = fc.record({
  pushes: fc.array(
    fc.record({ user: fc.constantFrom(...USERS), bytes: fc.integer({ min: 1, max: 5_000 }) }),
    {
      maxLength: 4,
    },
  ),
  written: fc.integer({ min: 0, max: 8_000 }),
  buffered: fc.integer({ min: 0, max: 20_000 }),
  advanceMs: fc.integer({ min: 1, max: 400 }),
});

const marksArb = fc
  .record({ low: fc.integer({ min: 0, max: 20_000 }), gap: fc.integer({ min: 0, max: 10_000 }) })
  .map(({ low, gap }) => ({ low, high: low + gap }));

const configArb = fc.record({
  diskBuffer: fc.oneof(fc.constant(UNLIMITED), marksArb),
  userProduceSpeed: fc.oneof(fc.constant(UNLIMITED), marksArb),
  workerProduceSpeed: fc.oneof(fc.constant(UNLIMITED), marksArb),
  sampleWindowMs: fc.integer({ min: 10, max: 2_000 }),
  checkIntervalMs: fc.constant(10),
});

interface Run {
  readonly states: CongestionState[];
  readonly events: CongestionEvent[];
  readonly buffered: number[];
}

type Tick = typeof tickArb extends fc.Arbitrary<infer T> ? T : never;

function run(c: CongestionConfig, ticks: readonly Tick[]): Run {
  let now = 0;
  let s = emptyCongestion();
  const states: CongestionState[] = [];
  const events: CongestionEvent[] = [];
  const buffered: number[] = [];
  for (const tick of ticks) {
    now += tick.advanceMs;
    for (const push of tick.pushes) {
      s = recordProduced(s, c, push.user, push.bytes, now);
      if (isUserCongested(s, push.user)) s = noteCongestedReply(s, push.user);
    }
    if (tick.written > 0) s = recordConsumed(s, c, tick.written, now);
    const assessed = assessCongestion(s, c, now, tick.buffered);
    s = assessed.state;
    events.push(...assessed.events);
    states.push(s);
    buffered.push(tick.buffered);
  }
  return { states, events, buffered };
}

describe('congestion control (core/storage/congestion.ts)', () => {
  it('never congests anyone with every watermark unlimited (the default)', () => {
    fc.assert(
      fc.property(fc.array(tickArb, { maxLength: 40 }), (ticks) => {
        const { states, events } = run(config(), ticks);
        assert.equal(events.length, 0);
        for (const s of states) {
          assert.equal(isWorkerCongested(s), false);
          for (const user of USERS) assert.equal(isUserCongested(s, user), false);
        }
      }),
    );
  });

  it('moves the disk-buffer trigger only across its watermarks (over past high, over until below low)', () => {
    fc.assert(
      fc.property(marksArb, fc.array(tickArb, { minLength: 1, maxLength: 60 }), (marks, ticks) => {
        const { states, buffered } = run(config({ diskBuffer: marks }), ticks);
        let was = false;
        states.forEach((s, i) => {
          const now = s.over.has('diskBuffer');
          const value = buffered[i]!;
          if (!was) assert.equal(now, value > marks.high, `not over before, buffer ${value}`);
          else assert.equal(now, value >= marks.low, `over before, buffer ${value}`);
          was = now;
        });
      }),
    );
  });

  it('alternates episode starts and ends, one each per episode, and an episode lasts while anything is over', () => {
    fc.assert(
      fc.property(configArb, fc.array(tickArb, { maxLength: 60 }), (c, ticks) => {
        const { states, events } = run(c, ticks);
        events.forEach((event, i) =>
          assert.equal(event.kind, i % 2 === 0 ? 'episodeStarted' : 'episodeEnded'),
        );
        for (const s of states) {
          assert.equal(s.episode !== undefined, s.over.size > 0 || s.heavyUsers.size > 0);
        }
      }),
    );
  });

  it('congests the heaviest users first while a worker-wide trigger is over, and someone always', () => {
    fc.assert(
      fc.property(marksArb, fc.array(tickArb, { minLength: 1, maxLength: 40 }), (marks, ticks) => {
        const { states } = run(config({ diskBuffer: marks }), ticks);
        for (const s of states) {
          const speeds = [...s.measure.userProduceSpeed];
          const congested = new Set(congestedUsers(s));
          if (!isWorkerCongested(s)) {
            assert.equal(congested.size, 0);
            continue;
          }
          if (speeds.some(([, speed]) => speed > 0))
            assert.ok(congested.size > 0, 'an episode congests someone');
          for (const [user, speed] of speeds) {
            if (!congested.has(user)) continue;
            for (const [other, otherSpeed] of speeds)
              if (otherSpeed > speed) assert.ok(congested.has(other), `${other} is heavier than ${user}`);
          }
        }
      }),
    );
  });

  it('congests a user over the user watermark whatever the worker load, until it falls below the low one', () => {
    const c = config({ userProduceSpeed: { low: 1_000, high: 5_000 } });
    let s = recordProduced(emptyCongestion(), c, 'a', 6_000, 0);
    s = recordProduced(s, c, 'b', 100, 0);
    s = assessCongestion(s, c, 10, 0).state;
    assert.deepEqual(congestedUsers(s), ['a']);
    assert.equal(isWorkerCongested(s), false, 'one heavy user is not a loaded worker');
    // The window moves on: a's 6,000 bytes leave it; 2,000 new bytes keep it between the watermarks.
    s = recordProduced(s, c, 'a', 2_000, 1_500);
    const still = assessCongestion(s, c, 1_500, 0);
    assert.deepEqual(congestedUsers(still.state), ['a'], 'between the watermarks it stays congested');
    const after = assessCongestion(still.state, c, 3_000, 0);
    assert.deepEqual(congestedUsers(after.state), []);
    assert.equal(after.events[0]?.kind, 'episodeEnded');
  });

  it('summarises an episode at its end: the congested replies and the users', () => {
    const c = config({ diskBuffer: { low: 100, high: 1_000 } });
    let s = recordProduced(emptyCongestion(), c, 'app-1', 5_000, 0);
    const started = assessCongestion(s, c, 10, 2_000);
    assert.deepEqual(started.events, [
      {
        kind: 'episodeStarted',
        at: 10,
        cause: 'disk buffer 2000 B > high watermark 1000 B',
        users: ['app-1'],
      },
    ]);
    s = noteCongestedReply(noteCongestedReply(started.state, 'app-1'), 'app-1');
    const ended = assessCongestion(s, c, 20, 50);
    assert.deepEqual(ended.events, [
      {
        kind: 'episodeEnded',
        at: 20,
        since: 10,
        congestedReplies: 2,
        users: ['app-1'],
        peakBufferedBytes: 2_000,
      },
    ]);
  });

  it('measures speed as the bytes of the window per second', () => {
    const c = config({ sampleWindowMs: 2_000 });
    let s = recordProduced(emptyCongestion(), c, 'a', 4_000, 0);
    s = recordProduced(s, c, 'a', 2_000, 1_000);
    assert.equal(meterSpeed(s.produced.get('a')!, c, 1_000), 3_000);
    assert.equal(meterSpeed(s.produced.get('a')!, c, 2_500), 1_000, 'the first bytes left the window');
    assert.equal(meterSpeed(s.produced.get('a')!, c, 5_000), 0);
  });
});
