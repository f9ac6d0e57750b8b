// A follower's reads of its group's stored state: decoded by the leader's restore code (what was laid out comes back),
// one range read reused for its time and shared by the requests that wait on it, failures and unreadable keys said
// as such and never reused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durableLayout } from '../../core/ha/key-layout.ts';
import {
  ALLOW_ALL_HOSTS,
  emptyApplications,
  recordApplicationHeartbeat,
  registerShuffle,
  registerWorker,
} from '../../core/lifecycle/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import { confAt, masterStateAt } from '../http/testing/fixtures.ts';
import {
  storedMasterState,
  StoredStateReader,
  StoredStateUnavailable,
  type StoredRange,
} from './stored-state-reader.ts';

const PREFIX = '/svc/master/state/';

function leaderState(): MasterState {
  const base = masterStateAt(confAt('master', '0.6.0'));
  const worker = { host: 'w1', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
  const workers = registerWorker(
    base.durable.workers,
    { id: worker, disks: [], networkLocation: '' },
    1_000,
    ALLOW_ALL_HOSTS,
  ).registry;
  let applications = recordApplicationHeartbeat(
    emptyApplications(),
    { appId: 'app-1', bytesWritten: 0, fileCount: 0 },
    2_000,
  ).registry;
  applications = registerShuffle(applications, 'app-1', 7, 2_000).registry;
  return { ...base, durable: { ...base.durable, workers, applications } };
}

function rangeOf(state: MasterState, revision: number): StoredRange {
  const values = [...durableLayout(PREFIX, state.durable)].map(([key, value]) => ({ key, value }));
  return { values: values.reverse(), revision };
}

describe('a follower’s reads of the stored state', () => {
  it('decodes what the leader laid out, whatever the order of the keys', () => {
    const leader = leaderState();
    const initial = masterStateAt(confAt('master', '0.6.0'));
    const stored = storedMasterState(PREFIX, rangeOf(leader, 5), initial);
    assert.deepEqual([...stored.durable.workers.workers.keys()], [...leader.durable.workers.workers.keys()]);
    assert.deepEqual(stored.durable.applications.apps.get('app-1')?.shuffles, [7]);
    assert.equal(stored.config, initial.config, 'the rest is the master’s initial state');
    assert.deepEqual(
      storedMasterState(PREFIX, { values: [], revision: 1 }, initial).durable,
      initial.durable,
      'no keys: a new group',
    );
  });

  it('reads once per max age, one read shared by the requests that wait on it', async () => {
    let now = 0;
    let reads = 0;
    let release: (() => void) | undefined;
    const reader = new StoredStateReader({
      list: async () => {
        reads += 1;
        await new Promise<void>((resolve) => (release = resolve));
        return rangeOf(leaderState(), 10 + reads);
      },
      prefix: PREFIX,
      initial: masterStateAt(confAt('master', '0.6.0')),
      maxAgeMs: 1_000,
      clock: () => now,
    });
    const first = reader.read();
    const second = reader.read();
    release!();
    assert.equal((await first).revision, 11);
    assert.equal(await second, await first, 'the waiting request shares the read');
    now = 999;
    assert.equal((await reader.read()).revision, 11, 'reused within its age');
    now = 1_000;
    const third = reader.read();
    release!();
    assert.equal((await third).revision, 12, 'read again once as old as the max age');
    assert.equal(reads, 2);
  });

  it('says why etcd could not be read, and asks again at the next request', async () => {
    let fail = true;
    const reader = new StoredStateReader({
      list: () =>
        fail
          ? Promise.reject(new Error('etcd Range: UNAVAILABLE: No connection established'))
          : Promise.resolve(rangeOf(leaderState(), 3)),
      prefix: PREFIX,
      initial: masterStateAt(confAt('master', '0.6.0')),
      maxAgeMs: 1_000,
      clock: () => 0,
    });
    await assert.rejects(reader.read(), (error: unknown) => {
      assert.ok(error instanceof StoredStateUnavailable, 'a StoredStateUnavailable');
      assert.match(error.message, /cannot read the group's state from etcd: etcd Range: UNAVAILABLE/);
      return true;
    });
    fail = false;
    assert.equal((await reader.read()).revision, 3, 'a failure is not reused');
  });

  it('names the key it cannot decode', async () => {
    const reader = new StoredStateReader({
      list: () => Promise.resolve({ values: [{ key: `${PREFIX}apps/x`, value: 'not json' }], revision: 4 }),
      prefix: PREFIX,
      initial: masterStateAt(confAt('master', '0.6.0')),
      maxAgeMs: 1_000,
      clock: () => 0,
    });
    await assert.rejects(
      reader.read(),
      /the group's state in etcd at revision 4 cannot be read: \/svc\/master\/state\/apps\/x is not JSON/,
    );
  });
});
