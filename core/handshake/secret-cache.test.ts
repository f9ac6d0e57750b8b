import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { initialSecretCache, lookupCachedSecret, secretAnswered } from './secret-cache.ts';

type Step =
  | { readonly kind: 'lookup'; readonly app: number; readonly fresh: boolean; readonly gap: number }
  | { readonly kind: 'answer'; readonly app: number; readonly how: 'found' | 'unregistered' | 'unanswered' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('lookup' as const),
    app: fc.nat(5),
    fresh: fc.boolean(),
    gap: fc.nat(2_000),
  }),
  fc.record({
    kind: fc.constant('answer' as const),
    app: fc.nat(5),
    how: fc.constantFrom('found' as const, 'unregistered' as const, 'unanswered' as const),
  }),
);

describe('a worker’s secret cache', () => {
  it('asks once per application in flight, trusts an answer for maxAge, evicts the oldest past the bound', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.array(step, { maxLength: 60 }), (maxEntries, steps) => {
        const config = { maxAgeMs: 1_000, maxEntries };
        const state = initialSecretCache();
        let now = 0;
        const learnt = new Map<string, number>();
        for (const s of steps) {
          const app = `app-${s.app}`;
          if (s.kind === 'lookup') {
            now += s.gap;
            const asking = state.asking.has(app);
            const lookup = lookupCachedSecret(config, state, app, now, s.fresh);
            const at = learnt.get(app);
            const trusted =
              !s.fresh && at !== undefined && state.entries.has(app) && now - at < config.maxAgeMs;
            assert.equal(lookup.kind, trusted ? 'cached' : 'ask');
            if (lookup.kind === 'ask')
              assert.equal(lookup.send, !asking, 'one request per application in flight');
          } else {
            const secret = `secret-of-${app}`;
            secretAnswered(
              config,
              state,
              app,
              s.how === 'found' ? { kind: 'found', secret } : { kind: s.how },
              now,
            );
            assert.ok(!state.asking.has(app), '!state.asking.has(app)');
            if (s.how === 'found') {
              learnt.set(app, now);
              assert.equal(state.entries.get(app)?.secret, secret);
            }
            if (s.how === 'unregistered') assert.ok(!state.entries.has(app), '!state.entries.has(app)');
          }
          assert.ok(state.entries.size <= maxEntries, 'state.entries.size <= maxEntries');
        }
      }),
      { numRuns: 500 },
    );
  });
});
