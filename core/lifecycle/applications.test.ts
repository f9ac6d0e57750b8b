import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  emptyApplications,
  expireApplications,
  recordApplicationHeartbeat,
  registerShuffle,
  registeredShuffleKeys,
  restoreApplications,
  runningApplications,
  shuffleExpiry,
  shuffleLookup,
  snapshotApplications,
  takePartitionSizeSample,
  unregisterApplication,
  unregisterShuffle,
} from './applications.ts';
import type { ApplicationRegistry, ApplicationRegistrySnapshot } from './applications.ts';

function heartbeat(registry: ApplicationRegistry, appId: string, now: number, bytes = 0, files = 0) {
  return recordApplicationHeartbeat(registry, { appId, bytesWritten: bytes, fileCount: files }, now).registry;
}

type Op =
  | { op: 'heartbeat'; app: number; bytes: number; files: number }
  | { op: 'register'; app: number; shuffle: number }
  | { op: 'unregister'; app: number; shuffle: number }
  | { op: 'end'; app: number }
  | { op: 'sample' };

const appArb = fc.nat(3);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('heartbeat' as const), app: appArb, bytes: fc.nat(1e9), files: fc.nat(100) }),
  fc.record({ op: fc.constant('register' as const), app: appArb, shuffle: fc.nat(4) }),
  fc.record({ op: fc.constant('unregister' as const), app: appArb, shuffle: fc.nat(4) }),
  fc.record({ op: fc.constant('end' as const), app: appArb }),
  fc.record({ op: fc.constant('sample' as const) }),
);

function run(ops: readonly Op[]): { registry: ApplicationRegistry; bytes: number; files: number } {
  let registry = emptyApplications();
  let bytes = 0;
  let files = 0;
  ops.forEach((op, now) => {
    switch (op.op) {
      case 'heartbeat':
        registry = heartbeat(registry, `app-${op.app}`, now, op.bytes, op.files);
        bytes += op.bytes;
        files += op.files;
        return;
      case 'register':
        registry = registerShuffle(registry, `app-${op.app}`, op.shuffle, now).registry;
        return;
      case 'unregister':
        registry = unregisterShuffle(registry, `app-${op.app}`, op.shuffle).registry;
        return;
      case 'end':
        registry = unregisterApplication(registry, `app-${op.app}`).registry;
        return;
      case 'sample':
        registry = takePartitionSizeSample(registry).registry;
        bytes = 0;
        files = 0;
        return;
    }
  });
  return { registry, bytes, files };
}

describe('applications: properties', () => {
  it('expires an application exactly when its last heartbeat is more than the timeout ago', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e12 }), fc.integer({ min: 0, max: 1e7 }), (last, timeout) => {
        let registry = heartbeat(emptyApplications(), 'app-1', last);
        registry = registerShuffle(registry, 'app-1', 7, last).registry;
        assert.deepEqual(expireApplications(registry, last + timeout, timeout).expired, []);
        const after = expireApplications(registry, last + timeout + 1, timeout);
        assert.deepEqual(after.expired, [{ appId: 'app-1', shuffles: ['app-1-7'] }]);
        assert.deepEqual(runningApplications(after.registry), []);
        assert.equal(shuffleLookup(after.registry)('app-1-7'), false);
      }),
    );
  });

  it('accumulates written bytes and files until a sample takes them', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        const { registry, bytes, files } = run(ops);
        assert.deepEqual(registry.writtenSinceSample, { bytes, files });
        assert.deepEqual(takePartitionSizeSample(registry).sample, { bytes, files });
      }),
    );
  });

  it('knows exactly the shuffles still registered, and restores them through JSON', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        const { registry } = run(ops);
        const expected = new Set<string>();
        for (const op of ops) {
          if (op.op === 'register') expected.add(`app-${op.app}-${op.shuffle}`);
          if (op.op === 'unregister') expected.delete(`app-${op.app}-${op.shuffle}`);
          if (op.op === 'end')
            for (const key of [...expected]) if (key.startsWith(`app-${op.app}-`)) expected.delete(key);
        }
        assert.deepEqual(new Set(registeredShuffleKeys(registry)), expected);
        const lookup = shuffleLookup(registry);
        for (const key of expected) assert.ok(lookup(key), 'lookup(key)');
        assert.deepEqual(
          restoreApplications(
            JSON.parse(JSON.stringify(snapshotApplications(registry))) as ApplicationRegistrySnapshot,
          ),
          registry,
        );
      }),
    );
  });
});

describe('applications: shuffleLookup', () => {
  it('answers exactly whether a key is among the registered keys, dashes and negative ids included', () => {
    const appId = fc.constantFrom('a', 'a-1', 'a-', 'a--1', '-', 'b-2-3');
    const shuffleId = fc.integer({ min: -3, max: 3 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(appId, shuffleId), { maxLength: 12 }),
        fc.array(
          fc.oneof(
            fc.tuple(appId, shuffleId).map(([a, s]) => `${a}-${s}`),
            fc.string(),
          ),
          {
            maxLength: 20,
          },
        ),
        (registered, asked) => {
          let registry = emptyApplications();
          for (const [a, s] of registered) registry = registerShuffle(registry, a, s, 0).registry;
          const keys = new Set(registeredShuffleKeys(registry));
          const lookup = shuffleLookup(registry);
          for (const key of [...asked, ...keys]) assert.equal(lookup(key), keys.has(key), key);
        },
      ),
    );
  });
});

describe('applications: a master that lost its state', () => {
  it('takes back exactly the shuffles a heartbeat names that it did not have, and loses none it had', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 30 }),
        appArb,
        fc.array(fc.nat(6), { maxLength: 6 }),
        (ops, app, named) => {
          const before = run(ops).registry;
          const appId = `app-${app}`;
          const had = before.apps.get(appId)?.shuffles ?? [];
          const { registry, revised } = recordApplicationHeartbeat(
            before,
            { appId, bytesWritten: 0, fileCount: 0, shuffleIds: named },
            1_000,
          );
          assert.deepEqual(new Set(revised), new Set(named.filter((id) => !had.includes(id))));
          assert.equal(revised.length, new Set(revised).size, 'each revised once');
          assert.deepEqual(registry.apps.get(appId)?.shuffles, [...had, ...revised]);
          for (const [other, record] of before.apps)
            if (other !== appId) assert.deepEqual(registry.apps.get(other), record);
        },
      ),
    );
  });

  it('expires a held shuffle only when its application dropped it or ended, or after a timeout unheard of', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 30 }),
        appArb,
        fc.nat(4),
        fc.nat(20_000),
        fc.integer({ min: 1, max: 10_000 }),
        fc.boolean(),
        (ops, app, shuffle, servingFor, timeout, toldEnded) => {
          const { registry } = run(ops);
          const key = `app-${app}-${shuffle}`;
          const expired = shuffleExpiry(registry, {
            now: 50_000 + servingFor,
            servingSince: 50_000,
            applicationTimeoutMs: timeout,
            ended: new Set(toldEnded ? [`app-${app}`] : []),
          })(key);
          const record = registry.apps.get(`app-${app}`);
          if (record?.shuffles.includes(shuffle) === true) assert.equal(expired, false, 'registered: kept');
          else if (record !== undefined) assert.equal(expired, true, 'its live application dropped it');
          else if (toldEnded) assert.equal(expired, true, 'its application told the master it ended');
          else assert.equal(expired, servingFor >= timeout, 'unknown application: kept for one timeout');
        },
      ),
    );
  });
});

describe('applications: examples', () => {
  it('keeps counts that are not non-negative numbers out of the estimate and says so', () => {
    const result = recordApplicationHeartbeat(
      emptyApplications(),
      { appId: 'a', bytesWritten: -5, fileCount: 1 },
      3,
    );
    assert.match(result.warning ?? '', /application a reported -5 bytes in 1 files/);
    assert.deepEqual(result.registry.writtenSinceSample, { bytes: 0, files: 0 });
    assert.deepEqual(runningApplications(result.registry), [{ appId: 'a', lastHeartbeat: 3 }]);
  });

  it('gives an application that registers a shuffle before its first heartbeat the registration time', () => {
    const first = registerShuffle(emptyApplications(), 'a', 0, 10);
    assert.equal(first.alreadyRegistered, false);
    assert.equal(registerShuffle(first.registry, 'a', 0, 20).alreadyRegistered, true);
    const later = registerShuffle(first.registry, 'a', 1, 20).registry;
    assert.deepEqual(runningApplications(later), [{ appId: 'a', lastHeartbeat: 10 }]);
    assert.deepEqual(unregisterApplication(later, 'a').shuffles, ['a-0', 'a-1']);
    assert.equal(unregisterApplication(later, 'b').shuffles, null);
    assert.equal(unregisterShuffle(later, 'a', 9).wasRegistered, false);
  });

  it('refuses a snapshot of another version or with an application listed twice', () => {
    assert.throws(
      () => restoreApplications({ version: 2 as 1, apps: [], writtenSinceSample: { bytes: 0, files: 0 } }),
      /version 2 is not supported/,
    );
    const twice = { appId: 'a', lastHeartbeat: 0, shuffles: [] };
    assert.throws(
      () =>
        restoreApplications({ version: 1, apps: [twice, twice], writtenSinceSample: { bytes: 0, files: 0 } }),
      /lists a twice/,
    );
  });
});
