import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { pausedSince, SilentPeers, type SilenceAction, type SilentPeerSettings } from './silent-peers.ts';

const SETTINGS: SilentPeerSettings = { pingAfterMs: 1_000, silentAfterMs: 5_000 };
/** Checks come at least this often, as a driver's timer brings them. */
const CHECK_EVERY_MS = 250;

type Op =
  | { readonly kind: 'ask'; readonly peer: number }
  | { readonly kind: 'settle'; readonly peer: number }
  | { readonly kind: 'hear'; readonly peer: number };

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('ask' as const, 'settle' as const, 'hear' as const),
  peer: fc.integer({ min: 0, max: 2 }),
});

/** A run: ops spaced by gaps (ms), with a check every CHECK_EVERY_MS of the time between. */
const runArb = fc.array(
  fc.tuple(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 3_000 })), opArb),
  {
    maxLength: 60,
  },
);

interface Trace {
  readonly actions: { readonly at: number; readonly action: SilenceAction<number> }[];
  /** Per peer: when it began to owe (undefined: owes nothing), when it was last heard from. */
  readonly events: { readonly at: number; readonly op: Op }[];
}

/** Plays a run against SilentPeers, checking every CHECK_EVERY_MS; returns what it decided and when. */
function play(run: readonly (readonly [number, Op])[], peers = new SilentPeers<number>(SETTINGS)): Trace {
  const owedSince = new Map<number, number>();
  const trace: Trace = { actions: [], events: [] };
  let now = 0;
  const checkUntil = (until: number): void => {
    while (now + CHECK_EVERY_MS <= until) {
      now += CHECK_EVERY_MS;
      for (const action of peers.check(now, owedSince)) trace.actions.push({ at: now, action });
    }
    now = until;
  };
  for (const [gap, op] of run) {
    checkUntil(now + gap);
    trace.events.push({ at: now, op });
    if (op.kind === 'ask' && !owedSince.has(op.peer)) owedSince.set(op.peer, now);
    if (op.kind === 'settle') owedSince.delete(op.peer);
    if (op.kind === 'hear') peers.heard(op.peer, now);
  }
  checkUntil(now + SETTINGS.silentAfterMs * 2);
  return trace;
}

/** When `peer` last began to owe, or was last heard from, at or before `at`. */
function quietSince(trace: Trace, peer: number, at: number): number | undefined {
  let owing: number | undefined;
  let heard: number | undefined;
  for (const { at: when, op } of trace.events) {
    if (when > at || op.peer !== peer) continue;
    if (op.kind === 'ask' && owing === undefined) owing = when;
    if (op.kind === 'settle') owing = undefined;
    if (op.kind === 'hear') heard = when;
  }
  if (owing === undefined) return undefined;
  return Math.max(owing, heard ?? owing);
}

describe('SilentPeers', () => {
  it('declares a peer silent only when it owed answers and was unheard from for silentAfterMs', () => {
    fc.assert(
      fc.property(runArb, (run) => {
        const trace = play(run);
        for (const { at, action } of trace.actions) {
          if (action.kind !== 'silent') continue;
          const since = quietSince(trace, action.peer, at);
          assert.ok(since !== undefined, `peer ${action.peer} owed nothing when declared silent at ${at}`);
          assert.ok(at - since >= SETTINGS.silentAfterMs, `declared after ${at - since} ms only`);
        }
      }),
    );
  });

  it('declares an unheard peer silent within one check of silentAfterMs, after pinging it first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 4_000 }), (peer, start) => {
        const peers = new SilentPeers<number>(SETTINGS);
        const owing = new Map([[peer, start]]);
        const actions: { at: number; action: SilenceAction<number> }[] = [];
        for (let now = start; now <= start + SETTINGS.silentAfterMs + CHECK_EVERY_MS; now += CHECK_EVERY_MS)
          for (const action of peers.check(now, owing)) actions.push({ at: now, action });
        const silent = actions.find(({ action }) => action.kind === 'silent');
        assert.ok(silent !== undefined, 'declared silent');
        assert.ok(
          silent.at - start < SETTINGS.silentAfterMs + CHECK_EVERY_MS,
          `late: ${silent.at - start} ms`,
        );
        const pinged = actions.find(({ action }) => action.kind === 'ping');
        assert.ok(pinged !== undefined && pinged.at < silent.at, 'asked for a sign of life before');
        assert.equal(peers.mayAsk(peer), false, 'no request to a silent peer');
      }),
    );
  });

  it('does not judge a peer on time this node did not run: after resumed, a full silentAfterMs from then', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        (start, pausedMs) => {
          const peers = new SilentPeers<number>(SETTINGS);
          const owing = new Map([[0, start]]);
          assert.deepEqual(peers.check(start, owing), []);
          // The node was stopped for pausedMs: its next check comes that late.
          const resumedAt = start + CHECK_EVERY_MS + pausedMs;
          peers.resumed(resumedAt);
          let silentAt: number | undefined;
          for (let now = resumedAt; silentAt === undefined; now += CHECK_EVERY_MS) {
            if (peers.check(now, owing).some((action) => action.kind === 'silent')) silentAt = now;
          }
          assert.ok(
            silentAt - resumedAt >= SETTINGS.silentAfterMs,
            `silent ${silentAt - resumedAt} ms after resuming`,
          );
          assert.ok(
            silentAt - resumedAt < SETTINGS.silentAfterMs + CHECK_EVERY_MS,
            'and no later than a check after',
          );
        },
      ),
    );
  });

  it('counts a node as paused only when its check comes more than four checks late', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000 }), fc.nat({ max: 10_000 }), (every, gap) => {
        assert.equal(pausedSince(1_000, 1_000 + gap, every), gap > 4 * every);
      }),
    );
  });

  it('never judges a peer that owes nothing', () => {
    const peers = new SilentPeers<number>(SETTINGS);
    for (let now = 0; now < 60_000; now += CHECK_EVERY_MS)
      assert.deepEqual(peers.check(now, []), [], 'no action');
    assert.equal(peers.mayAsk(1), true, 'an idle peer may be asked');
  });

  it('keeps a silent peer shunned until it is heard from, probing it once per pingAfterMs', () => {
    fc.assert(
      fc.property(runArb, (run) => {
        const peers = new SilentPeers<number>(SETTINGS);
        const trace = play(run, peers);
        for (const peer of [0, 1, 2]) {
          const silences = trace.actions.filter((a) => a.action.kind === 'silent' && a.action.peer === peer);
          for (const { at } of silences) {
            const heardAfter = trace.events.find(
              (e) => e.at >= at && e.op.kind === 'hear' && e.op.peer === peer,
            );
            const probes = trace.actions
              .filter((a) => a.action.kind === 'probe' && a.action.peer === peer && a.at > at)
              .filter((a) => heardAfter === undefined || a.at < heardAfter.at)
              .map((a) => a.at);
            for (let i = 1; i < probes.length; i++)
              assert.ok(
                probes[i]! - probes[i - 1]! >= SETTINGS.pingAfterMs,
                'probes at most once per pingAfterMs',
              );
            assert.ok(
              probes.length > 0 || (heardAfter?.at ?? Infinity) - at <= SETTINGS.pingAfterMs + CHECK_EVERY_MS,
              'a silent peer is probed',
            );
          }
        }
      }),
    );
  });

  it('counts a sign of life that came before the first check', () => {
    const peers = new SilentPeers<string>(SETTINGS);
    peers.heard('w1', 10);
    assert.deepEqual(
      peers.check(SETTINGS.silentAfterMs, [['w1', 0]]).map((a) => a.kind),
      ['ping'],
      'heard 10 ms after it began to owe: unheard for less than silentAfterMs',
    );
  });

  it('ends the silence at the first sign of life', () => {
    const peers = new SilentPeers<string>(SETTINGS);
    const actions = peers.check(SETTINGS.silentAfterMs, [['w3', 0]]);
    assert.deepEqual(
      actions.map((a) => a.kind),
      ['silent'],
      'silent at once when first checked that late',
    );
    assert.equal(peers.mayAsk('w3'), false, 'shunned');
    assert.deepEqual(peers.silentPeers(), ['w3'], 'listed');
    assert.equal(peers.heard('w3', SETTINGS.silentAfterMs + 1), true, 'hearing from it ends its silence');
    assert.equal(peers.mayAsk('w3'), true, 'asked again');
    assert.equal(peers.heard('w3', SETTINGS.silentAfterMs + 2), false, 'a second sign of life ends nothing');
  });

  it('catches the planted bug: silent-peer-reused leaves a silent peer askable', () => {
    const peers = new SilentPeers<string>(SETTINGS, { plantedBug: 'silent-peer-reused' });
    const actions = peers.check(SETTINGS.silentAfterMs, [['w3', 0]]);
    assert.equal(actions[0]?.kind, 'silent', 'declared silent');
    assert.equal(peers.mayAsk('w3'), true, 'and yet asked again: the bug');
  });

  it('catches the planted bug: silent-peer-never-heard keeps a peer heard from again shunned', () => {
    const peers = new SilentPeers<string>(SETTINGS, { plantedBug: 'silent-peer-never-heard' });
    assert.equal(peers.check(SETTINGS.silentAfterMs, [['w3', 0]])[0]?.kind, 'silent', 'declared silent');
    assert.equal(peers.heard('w3', SETTINGS.silentAfterMs + 1), false, 'hearing from it ends nothing');
    assert.equal(peers.mayAsk('w3'), false, 'and it is still refused: the bug');
  });

  it('refuses settings where a ping could not come before the silence', () => {
    assert.throws(() => new SilentPeers({ pingAfterMs: 5_000, silentAfterMs: 5_000 }), /pingAfterMs/);
    assert.throws(() => new SilentPeers({ pingAfterMs: 0, silentAfterMs: 5_000 }), /pingAfterMs/);
  });
});
