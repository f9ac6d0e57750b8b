import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  aggregateUsage,
  checkQuota,
  computeQuotaStatus,
  describeExceeded,
  heaviestUntilWithin,
  NO_CONSUMPTION,
  QUOTA_METRICS,
  QUOTAS_OFF,
  UNLIMITED,
  userKey,
  type AppConsumption,
  type QuotaLimits,
  type QuotaSettings,
  type UserIdentifier,
} from './index.ts';

const USERS: readonly UserIdentifier[] = [
  { tenant: 't1', name: 'a' },
  { tenant: 't1', name: 'b' },
  { tenant: 't2', name: 'a' },
];
const APPS = ['app-1', 'app-2', 'app-3', 'app-4', 'app-5'];
/** app-5 is unknown to the master: it counts for the cluster only. */
const userOf = (appId: string): UserIdentifier | undefined =>
  appId === 'app-5' ? undefined : USERS[Number(appId.slice(4)) % USERS.length];

const reportArb = fc.array(
  fc.record({
    appId: fc.constantFrom(...APPS),
    diskBytesWritten: fc.nat(1000),
    diskFileCount: fc.nat(10),
    hdfsBytesWritten: fc.nat(1000),
    hdfsFileCount: fc.nat(10),
  }),
  { maxLength: 6 },
);
const reportsArb = fc.array(reportArb, { maxLength: 4 });
const limitArb = fc.oneof(fc.nat(3000), fc.constant(Number.POSITIVE_INFINITY));
const limitsArb: fc.Arbitrary<QuotaLimits> = fc.record({
  diskBytesWritten: limitArb,
  diskFileCount: limitArb,
  hdfsBytesWritten: limitArb,
  hdfsFileCount: limitArb,
});
const settingsArb: fc.Arbitrary<QuotaSettings> = fc.record({
  enabled: fc.boolean(),
  userEnabled: fc.boolean(),
  clusterEnabled: fc.boolean(),
  interruptShuffle: fc.boolean(),
  user: limitsArb,
  tenants: fc
    .option(limitsArb, { nil: undefined })
    .map((t1) => new Map(t1 === undefined ? [] : [['t1', t1]])),
  users: fc.option(limitsArb, { nil: undefined }).map((u) => new Map(u === undefined ? [] : [['t1/b', u]])),
  cluster: limitsArb,
});

function sum(reports: readonly (readonly AppConsumption[])[], keep: (c: AppConsumption) => boolean) {
  const total = { ...NO_CONSUMPTION };
  for (const report of reports)
    for (const c of report) if (keep(c)) for (const m of QUOTA_METRICS) total[m] += c[m];
  return total;
}

describe('quota: usage aggregated from the workers’ reports', () => {
  it('a user’s usage is the sum of its applications’ reports on every worker; the cluster’s, of all', () => {
    fc.assert(
      fc.property(reportsArb, (reports) => {
        const usage = aggregateUsage(reports, userOf);
        assert.deepEqual(
          usage.cluster,
          sum(reports, () => true),
          'the cluster total counts every report',
        );
        for (const user of USERS) {
          const expected = sum(reports, (c) => {
            const owner = userOf(c.appId);
            return owner !== undefined && userKey(owner) === userKey(user);
          });
          const got = usage.byUser.get(userKey(user)) ?? NO_CONSUMPTION;
          assert.deepEqual(got, expected, `usage of ${userKey(user)}`);
        }
      }),
    );
  });
});

describe('quota: the check (user, then cluster)', () => {
  it('refuses exactly when an enabled quota of the user or the cluster is reached', () => {
    fc.assert(
      fc.property(settingsArb, reportsArb, fc.constantFrom(...USERS), (settings, reports, user) => {
        const usage = aggregateUsage(reports, userOf);
        const status = computeQuotaStatus(settings, usage, userOf);
        const verdict = checkQuota(settings, status, user);
        const used = usage.byUser.get(userKey(user));
        const limits =
          settings.users.get(userKey(user)) ?? settings.tenants.get(user.tenant) ?? settings.user;
        const userOver =
          used !== undefined && QUOTA_METRICS.some((m) => used[m] >= limits[m]) && settings.userEnabled;
        const clusterOver =
          settings.clusterEnabled && QUOTA_METRICS.some((m) => usage.cluster[m] >= settings.cluster[m]);
        const expectRefused = settings.enabled && (userOver || clusterOver);
        assert.equal(verdict !== undefined, expectRefused, 'refused iff a quota is reached');
        if (verdict !== undefined) {
          assert.equal(verdict.scope, userOver ? 'user' : 'cluster', 'the user’s quota is checked first');
          assert.ok(verdict.usage >= verdict.limit, 'the verdict names a reached limit');
          const text = describeExceeded(verdict, user);
          for (const part of [userKey(user), verdict.metric, String(verdict.usage), String(verdict.limit)])
            assert.ok(text.includes(part), `the message names ${part}: ${text}`);
        }
      }),
    );
  });

  it('never refuses with quotas off, or with unlimited quotas', () => {
    fc.assert(
      fc.property(reportsArb, fc.constantFrom(...USERS), (reports, user) => {
        const usage = aggregateUsage(reports, userOf);
        const unlimited: QuotaSettings = {
          ...QUOTAS_OFF,
          enabled: true,
          user: UNLIMITED,
          cluster: UNLIMITED,
        };
        for (const settings of [QUOTAS_OFF, unlimited]) {
          const status = computeQuotaStatus(settings, usage, userOf);
          assert.equal(checkQuota(settings, status, user), undefined, 'nothing is refused');
        }
      }),
    );
  });
});

describe('quota: interrupting shuffles', () => {
  it('interrupts the heaviest applications first, just enough to fall below the limit', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1000), { maxLength: 8 }), fc.nat(5000), (sizes, limit) => {
        const apps = sizes.map(
          (size, i) => [`app-${i}`, { ...NO_CONSUMPTION, diskBytesWritten: size }] as const,
        );
        const usage = sizes.reduce((a, b) => a + b, 0);
        const chosen = heaviestUntilWithin(apps, 'diskBytesWritten', usage, limit);
        const freed = chosen.reduce((s, appId) => s + sizes[Number(appId.slice(4))]!, 0);
        if (usage >= limit)
          assert.ok(usage - freed < limit || chosen.length === sizes.length, 'below the limit');
        else assert.equal(chosen.length, 0, 'nothing interrupted under the limit');
        // As few as that takes: without the last one chosen, usage would still be at or above the limit.
        if (chosen.length > 0) {
          const last = sizes[Number(chosen[chosen.length - 1]!.slice(4))]!;
          assert.ok(usage - (freed - last) >= limit, 'no application is interrupted without need');
        }
        const chosenSizes = chosen.map((appId) => sizes[Number(appId.slice(4))]!);
        const rest = sizes.filter((_, i) => !chosen.includes(`app-${i}`));
        for (const size of rest)
          assert.ok(
            chosenSizes.every((c) => c >= size),
            'the heaviest are chosen first',
          );
      }),
    );
  });

  it('interrupts only with svc.quota.interruptShuffle.enabled, and only applications of over-quota users', () => {
    fc.assert(
      fc.property(settingsArb, reportsArb, (settings, reports) => {
        const usage = aggregateUsage(reports, userOf);
        const status = computeQuotaStatus(settings, usage, userOf);
        if (!settings.interruptShuffle || !settings.enabled) {
          assert.equal(status.interrupted.size, 0, 'no interruption without the switch');
          return;
        }
        for (const [appId, over] of status.interrupted) {
          if (over.scope === 'user') {
            const owner = userOf(appId);
            assert.ok(owner !== undefined && status.users.has(userKey(owner)), `${appId}'s user is over`);
          } else assert.ok(status.cluster !== undefined, 'the cluster is over');
        }
      }),
    );
  });
});
