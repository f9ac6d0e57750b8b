import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Principal } from '../machines/effects.ts';
import {
  lifecycleManagerNodeId,
  mapTaskNodeId,
  masterNodeId,
  reduceTaskNodeId,
  workerNodeId,
} from './node-ids.ts';
import {
  nameTheftRefusal,
  routeExpired,
  routeSweepDue,
  routeTakeoverRefusal,
  type ConnectionIdentity,
} from './speakers.ts';

const ON = { authenticated: true } as const;
const OFF = { authenticated: false } as const;

const appId = fc.constantFrom('a', 'b', 'app-20261125-0001');
const nodeOf = fc.oneof(
  appId.map((app) => ({ node: lifecycleManagerNodeId(app), owner: app })),
  fc
    .tuple(appId, fc.nat(9), fc.nat(9), fc.nat(3))
    .map(([app, s, m, a]) => ({ node: mapTaskNodeId(app, s, m, a), owner: app })),
  fc
    .tuple(appId, fc.nat(9), fc.nat(9))
    .map(([app, s, p]) => ({ node: reduceTaskNodeId(app, s, p), owner: app })),
  fc.constant({ node: masterNodeId(), owner: undefined as string | undefined }),
  fc.constant({
    node: workerNodeId({ host: 'h', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 }),
    owner: undefined as string | undefined,
  }),
);
const principal: fc.Arbitrary<Principal | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constant({ kind: 'server' } as const),
  appId.map((app) => ({ kind: 'application', appId: app }) as const),
);
const identity: fc.Arbitrary<ConnectionIdentity> = fc.oneof(
  fc.constantFrom({ role: 'master' } as const, { role: 'worker' } as const),
  appId.map((app) => ({ role: 'client', application: app }) as const),
);

describe('nameTheftRefusal', () => {
  it('with authentication off, lets every connection speak as every node', () => {
    fc.assert(
      fc.property(identity, principal, nodeOf, (who, proved, { node }) => {
        assert.equal(nameTheftRefusal(OFF, who, proved, node), undefined);
      }),
    );
  });

  it("lets a client speak only as its own application's nodes, and a server only once it proved the cluster's secret", () => {
    fc.assert(
      fc.property(identity, principal, nodeOf, (who, proved, { node, owner }) => {
        const refusal = nameTheftRefusal(ON, who, proved, node);
        const allowed = who.role === 'client' ? owner === who.application : proved?.kind === 'server';
        assert.equal(refusal === undefined, allowed, refusal);
        if (refusal !== undefined) assert.match(refusal, new RegExp(`speaks as ${node}`));
      }),
    );
  });

  it('is switched off by its planted bug only', () => {
    const client = { role: 'client', application: 'a' } as const;
    assert.notEqual(nameTheftRefusal(ON, client, undefined, lifecycleManagerNodeId('b')), undefined);
    assert.equal(
      nameTheftRefusal(
        { authenticated: true, plantedBug: 'speaker-rules-ignored' },
        client,
        undefined,
        lifecycleManagerNodeId('b'),
      ),
      undefined,
    );
  });
});

describe('routeTakeoverRefusal', () => {
  it('refuses exactly a takeover, with authentication on, of an open route held by another proven identity', () => {
    fc.assert(
      fc.property(principal, fc.boolean(), principal, fc.boolean(), (held, open, claimant, authenticated) => {
        const node = lifecycleManagerNodeId('a');
        const refusal = routeTakeoverRefusal({ authenticated }, node, { principal: held, open }, claimant);
        const same =
          held === undefined || claimant === undefined
            ? held === claimant
            : held.kind === 'server' || claimant.kind === 'server'
              ? held.kind === claimant.kind
              : held.appId === claimant.appId;
        const refused = authenticated && open && held !== undefined && !same;
        assert.equal(refusal !== undefined, refused, refusal);
      }),
    );
  });

  it('lets anyone take a route nobody holds', () => {
    fc.assert(
      fc.property(principal, (claimant) => {
        assert.equal(routeTakeoverRefusal(ON, masterNodeId(), undefined, claimant), undefined);
      }),
    );
  });
});

describe('route expiry', () => {
  it('keeps a route at least the idle time and at most twice that while others speak', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 10_000 }),
        fc.array(fc.integer({ min: 1, max: 5_000 }), { minLength: 1, maxLength: 60 }),
        (idleMs, gaps) => {
          // One route spoke at 0; other nodes speak after each gap, and each speaking may sweep, as the transport does.
          let now = 0;
          let lastSweep = 0;
          let forgottenAt: number | undefined;
          for (const gap of gaps) {
            now += gap;
            if (!routeSweepDue(lastSweep, now, idleMs)) continue;
            lastSweep = now;
            if (forgottenAt === undefined && routeExpired(0, now, idleMs)) forgottenAt = now;
          }
          if (forgottenAt !== undefined) assert.ok(forgottenAt > idleMs, 'never before the idle time');
          // With others speaking at least every idle/2, a sweep comes within idle/2 of the expiry.
          const dense = gaps.every((gap) => gap <= idleMs / 2);
          if (dense && now > 2 * idleMs) {
            assert.ok(forgottenAt !== undefined && forgottenAt <= 2 * idleMs, String(forgottenAt));
          }
        },
      ),
    );
  });
});
