import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { secretLookup, type CachedSecret } from './cached-secrets.ts';

/** Something that happens to one application, `gap` ms after the previous event. */
type Event =
  | { readonly kind: 'registerAgain'; readonly gap: number }
  | { readonly kind: 'proof'; readonly gap: number; readonly version: number };

const event: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constant('registerAgain' as const), gap: fc.nat(20_000) }),
  fc.record({ kind: fc.constant('proof' as const), gap: fc.nat(20_000), version: fc.nat(6) }),
);

/**
 * A worker's cache driven by `secretLookup` as runtime/process/application-secrets.ts drives it, against a master
 * whose secret for the application changes at each `registerAgain`. A proof holds the secret of one version
 * (the current one, or an older one, or one never issued).
 */
describe('secretLookup', () => {
  it('lets the current secret in at once, an old one at most maxAge after it was replaced, asking at most once a proof', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30_000 }),
        fc.array(event, { maxLength: 40 }),
        (maxAgeMs, events) => {
          let now = 0;
          let current = 0;
          const replacedAt: number[] = [];
          let cache: CachedSecret | undefined;
          const secretOf = (version: number) => `secret-${version}`;
          const ask = () => {
            cache = { secret: secretOf(current), learntAt: now };
            return cache.secret;
          };
          for (const e of events) {
            now += e.gap;
            if (e.kind === 'registerAgain') {
              replacedAt[current] = now;
              current += 1;
              continue;
            }
            const proof = secretOf(e.version);
            let asks = 0;
            let accepted: boolean;
            const first = secretLookup(cache, now, maxAgeMs);
            if (first.kind === 'useCached' && first.secret === proof) {
              accepted = true;
            } else {
              const second = first.kind === 'ask' ? first : secretLookup(cache, now, maxAgeMs, true);
              assert.equal(second.kind, 'ask');
              asks += 1;
              accepted = ask() === proof;
            }
            assert.ok(asks <= 1, 'asks <= 1');
            if (e.version === current) assert.ok(accepted, 'the current secret always gets in');
            if (accepted && e.version !== current) {
              const replaced = replacedAt[e.version];
              assert.ok(replaced !== undefined, 'a secret never issued never gets in');
              assert.ok(
                now < replaced + maxAgeMs,
                `secret ${e.version} replaced at ${replaced} still in at ${now}`,
              );
            }
          }
        },
      ),
    );
  });

  it('answers from the cache while the secret is younger than maxAge, and asks from then on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30_000 }),
        fc.nat(60_000),
        fc.nat(60_000),
        (maxAgeMs, learntAt, age) => {
          const lookup = secretLookup({ secret: 's', learntAt }, learntAt + age, maxAgeMs);
          assert.deepEqual(
            lookup,
            age < maxAgeMs ? { kind: 'useCached', secret: 's' } : { kind: 'ask', why: 'expired' },
          );
        },
      ),
    );
  });

  it('asks for an application it never learnt, after a mismatch, and when the clock went back', () => {
    assert.deepEqual(secretLookup(undefined, 5, 10), { kind: 'ask', why: 'unknown' });
    assert.deepEqual(secretLookup({ secret: 's', learntAt: 5 }, 6, 10, true), {
      kind: 'ask',
      why: 'mismatch',
    });
    assert.deepEqual(secretLookup({ secret: 's', learntAt: 5 }, 4, 10), { kind: 'ask', why: 'expired' });
  });
});
