import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { emptyApplications, emptyRegistry } from '../lifecycle/index.ts';
import type { MasterDurableState } from '../machines/master/state.ts';
import {
  actingAsLeader,
  haStep,
  initialHaState,
  leaderHint,
  type HaConfig,
  type HaEffect,
  type HaInput,
  type HaState,
} from './leadership.ts';
import type { StoreRequest, StoreResult } from './store.ts';
import { actingWindowMs, DEFAULT_HA_TIMING } from './timing.ts';

const EMPTY: MasterDurableState = {
  workers: emptyRegistry(),
  applications: emptyApplications(),
  estimatedPartitionSize: 1,
  bookings: new Map(),
};
const CONFIG: HaConfig = {
  memberId: 'm1',
  announce: 'm1@h1:9097',
  election: '/svc/election/',
  statePrefix: '/svc/state/',
  timing: DEFAULT_HA_TIMING,
  emptyState: EMPTY,
};

class Harness {
  state: HaState = initialHaState(CONFIG);
  now = 0;
  effects: HaEffect[] = [];
  step(input: HaInput): HaEffect[] {
    const { state, effects } = haStep(this.state, input, this.now);
    this.state = state;
    this.effects.push(...effects);
    return effects;
  }
  requests(effects: readonly HaEffect[]): StoreRequest[] {
    return effects.flatMap((e) => (e.kind === 'store' ? [e.request] : []));
  }
  only(effects: readonly HaEffect[], kind: StoreRequest['kind']): StoreRequest {
    const found = this.requests(effects).filter((r) => r.kind === kind);
    assert.equal(found.length, 1, `one ${kind} in ${JSON.stringify(effects)}`);
    return found[0]!;
  }
  answer(result: StoreResult): HaEffect[] {
    return this.step({ kind: 'result', result });
  }
  /** Start, get a lease, win, load an empty store: leading. */
  lead(): void {
    const grant = this.only(this.step({ kind: 'start' }), 'leaseGrant');
    const campaign = this.only(
      this.answer({ kind: 'leaseGranted', op: grant.op, lease: '7', ttlMs: DEFAULT_HA_TIMING.leaseTtlMs }),
      'campaign',
    );
    const load = this.only(
      this.answer({ kind: 'campaignWon', op: campaign.op, key: '/svc/election/7', revision: 5 }),
      'getPrefix',
    );
    const started = this.answer({ kind: 'range', op: load.op, revision: 5, keys: [] });
    assert.ok(
      started.some((e) => e.kind === 'startActing'),
      'acting once loaded',
    );
  }
}

describe('the leadership machine', () => {
  it('leads only after a lease, a won election and a loaded state; writes fenced; confirms persists', () => {
    const h = new Harness();
    h.lead();
    assert.equal(actingAsLeader(h.state, h.now), true);
    const layout = new Map([['/svc/state/meta', '{"version":1}']]);
    const txn = h.only(h.step({ kind: 'persist', id: 1, changes: layout }), 'txn');
    assert.equal(txn.kind, 'txn');
    if (txn.kind !== 'txn') return;
    assert.deepEqual(txn.txn.fence, [
      { key: '/svc/election/7', target: 'createRevision', equals: 5 },
      { key: '/svc/election/7', target: 'lease', equals: '7' },
    ]);
    assert.deepEqual(txn.txn.compares, [{ key: '/svc/state/meta', target: 'createRevision', equals: 0 }]);
    // A second persist while the first is under way waits, then goes with the next.
    assert.deepEqual(
      h.requests(
        h.step({
          kind: 'persist',
          id: 2,
          changes: new Map(layout).set('/svc/state/apps/a', '{"appId":"a"}'),
        }),
      ),
      [],
    );
    const done = h.answer({ kind: 'committed', op: txn.op, revision: 9 });
    assert.deepEqual(
      done.find((e) => e.kind === 'persisted'),
      { kind: 'persisted', ids: [1] },
    );
    const second = h.only(done, 'txn');
    if (second.kind !== 'txn') return;
    assert.deepEqual(second.txn.ops, [{ kind: 'put', key: '/svc/state/apps/a', value: '{"appId":"a"}' }]);
  });

  it('stops acting at its deadline when keep-alives go unanswered, saying why in one line, and campaigns again', () => {
    const h = new Harness();
    h.lead();
    h.now = 2_000;
    const keepAlive = h.only(h.step({ kind: 'tick' }), 'leaseKeepAlive');
    h.now = 2_500;
    h.answer({ kind: 'failed', op: keepAlive.op, failure: 'unavailable', detail: 'connection refused' });
    const deadline = actingWindowMs(DEFAULT_HA_TIMING.leaseTtlMs, DEFAULT_HA_TIMING);
    h.now = deadline - 1;
    assert.equal(actingAsLeader(h.state, h.now), true);
    h.now = deadline;
    assert.equal(actingAsLeader(h.state, h.now), false, 'no driver may act at the deadline, before any step');
    const effects = h.step({ kind: 'tick' });
    const stop = effects.filter((e) => e.kind === 'stopActing');
    assert.equal(stop.length, 1);
    const lines = effects.filter((e) => e.kind === 'log' && e.event === 'ha.stepDown');
    assert.equal(lines.length, 1);
    assert.match(JSON.stringify(lines[0]), /not renewed in time.*has not answered since 2500/);
    h.now += DEFAULT_HA_TIMING.campaignRetryMs;
    h.only(h.step({ kind: 'tick' }), 'leaseGrant');
  });

  it('steps down when a write is refused by its fence, abandoning the persists it held', () => {
    const h = new Harness();
    h.lead();
    const txn = h.only(
      h.step({ kind: 'persist', id: 1, changes: new Map([['/svc/state/meta', '{}']]) }),
      'txn',
    );
    h.step({ kind: 'persist', id: 2, changes: new Map([['/svc/state/meta', '{"x":1}']]) });
    const effects = h.answer({ kind: 'refused', op: txn.op, fenceHeld: false, revision: 30 });
    assert.deepEqual(
      effects.find((e) => e.kind === 'stopActing'),
      {
        kind: 'stopActing',
        reason: 'a write was refused: leader key no longer ours at revision 30',
        abandoned: [1, 2],
      },
    );
    assert.equal(actingAsLeader(h.state, h.now), false);
  });

  it('rereads its state under the same term when a write’s outcome is unknown', () => {
    const h = new Harness();
    h.lead();
    const txn = h.only(
      h.step({ kind: 'persist', id: 1, changes: new Map([['/svc/state/meta', '{}']]) }),
      'txn',
    );
    const effects = h.answer({ kind: 'failed', op: txn.op, failure: 'timeout', detail: 'no answer in 3 s' });
    assert.ok(
      effects.some((e) => e.kind === 'stopActing'),
      'stops acting',
    );
    h.only(effects, 'getPrefix');
  });

  it('never names itself as leader once it stopped acting', () => {
    const h = new Harness();
    h.lead();
    const observe = h.requests(h.effects).find((r) => r.kind === 'observe')!;
    h.answer({ kind: 'leaderIs', op: observe.op, value: CONFIG.announce, revision: 5 });
    assert.equal(leaderHint(h.state), null, 'not itself');
    h.answer({ kind: 'leaderIs', op: observe.op, value: 'm2@h2:9097', revision: 9 });
    assert.equal(leaderHint(h.state), 'm2@h2:9097', 'the reported leader');
  });

  it('resigning revokes the lease at once', () => {
    const h = new Harness();
    h.lead();
    const effects = h.step({ kind: 'resign' });
    assert.ok(
      effects.some((e) => e.kind === 'stopActing'),
      'stops acting',
    );
    assert.equal(h.only(effects, 'leaseRevoke').kind, 'leaseRevoke');
  });

  it('acts only within the window of a renewal it saw answered, and start and stop alternate (any store behaviour)', () => {
    type Reply = { readonly delay: number; readonly outcome: 'ok' | 'fail' | 'lost' | 'refuse' };
    const reply: fc.Arbitrary<Reply> = fc.record({
      delay: fc.integer({ min: 0, max: 4_000 }),
      outcome: fc.constantFrom('ok', 'ok', 'ok', 'fail', 'lost', 'refuse'),
    });
    fc.assert(
      fc.property(
        fc.array(reply, { minLength: 1, maxLength: 120 }),
        fc.array(fc.nat(3_000), { maxLength: 60 }),
        (replies, persistGaps) => {
          let state = initialHaState(CONFIG);
          let now = 0;
          const sentAt = new Map<number, number>();
          /** Send times of renewals (grants, keep-alives) answered with a positive TTL. */
          const renewedFrom: number[] = [];
          const pending: { at: number; request: StoreRequest }[] = [];
          let acting = false;
          let replyIndex = 0;
          let persistId = 0;
          let nextPersistAt = persistGaps[0] ?? Infinity;
          let wake = Infinity;
          let revision = 100;
          const run = (input: HaInput) => {
            const step = haStep(state, input, now);
            state = step.state;
            for (const e of step.effects) {
              if (e.kind === 'store') {
                sentAt.set(e.request.op, now);
                const r = replies[replyIndex++ % replies.length]!;
                if (r.outcome !== 'lost') pending.push({ at: now + r.delay, request: e.request });
              } else if (e.kind === 'wakeAt') wake = e.at;
              else if (e.kind === 'startActing') {
                assert.equal(acting, false, 'started twice');
                acting = true;
              } else if (e.kind === 'stopActing') {
                assert.equal(acting, true, 'stopped without starting');
                acting = false;
              }
            }
            assert.equal(
              acting,
              actingAsLeader(state, now) || (acting && state.phase.kind === 'leading' && false),
            );
            if (actingAsLeader(state, now)) {
              const window = actingWindowMs(DEFAULT_HA_TIMING.leaseTtlMs, DEFAULT_HA_TIMING);
              assert.ok(
                renewedFrom.some((s) => now < s + window),
                `acting at ${now} without a renewal in the window`,
              );
            }
          };
          run({ kind: 'start' });
          for (let steps = 0; steps < 400; steps += 1) {
            pending.sort((a, b) => a.at - b.at);
            const nextReply = pending[0]?.at ?? Infinity;
            const at = Math.min(nextReply, wake, nextPersistAt);
            if (at === Infinity) break;
            now = Math.max(now, at);
            if (at === nextReply) {
              const { request } = pending.shift()!;
              const r = replies[(request.op * 7) % replies.length]!;
              const failed = r.outcome === 'fail';
              const result = answerFor(request, failed, r.outcome === 'refuse', (revision += 1));
              if (result.kind === 'leaseGranted' || (result.kind === 'keptAlive' && result.ttlMs > 0))
                renewedFrom.push(sentAt.get(request.op)!);
              run({ kind: 'result', result });
            } else if (at === wake) {
              wake = Infinity;
              run({ kind: 'tick' });
            } else {
              persistId += 1;
              nextPersistAt = now + (persistGaps[persistId] ?? Infinity);
              if (actingAsLeader(state, now))
                run({
                  kind: 'persist',
                  id: persistId,
                  changes: new Map([['/svc/state/meta', `{"n":${persistId}}`]]),
                });
            }
          }
        },
      ),
    );
  });
});

function answerFor(request: StoreRequest, failed: boolean, refuse: boolean, revision: number): StoreResult {
  const op = request.op;
  if (failed && request.kind !== 'leaseRevoke')
    return { kind: 'failed', op, failure: 'timeout', detail: 'drawn' };
  switch (request.kind) {
    case 'leaseGrant':
      return { kind: 'leaseGranted', op, lease: `L${op}`, ttlMs: request.ttlMs };
    case 'leaseKeepAlive':
      return {
        kind: 'keptAlive',
        op,
        lease: request.lease,
        ttlMs: refuse ? 0 : DEFAULT_HA_TIMING.leaseTtlMs,
      };
    case 'leaseRevoke':
      return { kind: 'revoked', op };
    case 'campaign':
      return { kind: 'campaignWon', op, key: `/svc/election/${request.lease}`, revision };
    case 'getPrefix':
      return { kind: 'range', op, revision, keys: [] };
    case 'txn':
      return refuse
        ? { kind: 'refused', op, fenceHeld: revision % 2 === 0, revision }
        : { kind: 'committed', op, revision };
    case 'observe':
      return { kind: 'leaderIs', op, value: null, revision };
    case 'cancel':
      return { kind: 'revoked', op };
  }
}
