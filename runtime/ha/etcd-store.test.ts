// The coordination store against a real etcd: writes batched within etcd's limits, compare-and-swap on mod
// revisions, fencing on the leader key, and an election that reports etcd's loss and recovers when it returns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EtcdCallError, EtcdClient } from './etcd-client.ts';
import {
  EtcdStore,
  MAX_REQUEST_BYTES,
  MAX_TXN_OPS,
  batchWrites,
  bytesOf,
  leadershipCompares,
  textOf,
  type Leadership,
  type Write,
} from './etcd-store.ts';
import { LeaderElection, type ElectionReport } from './leader-election.ts';
import { coreRules } from './leadership-rules.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from '../testing/etcd.ts';
import { pollFor } from '../testing/poll.ts';

const FENCE: Leadership = { leaderKey: 'x/leader', nodeId: 'm1', lease: 1n, createRevision: 1 };

describe('batches of writes', () => {
  it('keeps every transaction within 128 compares and operations', () => {
    const writes: Write[] = Array.from({ length: 1000 }, (_, index) => ({
      kind: 'put',
      key: `s/${index}`,
      value: bytesOf('v'),
      expectModRevision: 0,
    }));
    const batches = batchWrites(writes, leadershipCompares(FENCE));
    assert.deepEqual(batches.flat(), writes);
    for (const batch of batches) assert.ok(batch.length + 2 <= MAX_TXN_OPS, `${batch.length} writes`);
    assert.equal(batches.length, Math.ceil(1000 / (MAX_TXN_OPS - 2)));
  });

  it('keeps every transaction within 1.5 MiB, and refuses one write larger than that', () => {
    const writes: Write[] = Array.from({ length: 10 }, (_, index) => ({
      kind: 'put',
      key: `big/${index}`,
      value: new Uint8Array(400 * 1024),
    }));
    const batches = batchWrites(writes, leadershipCompares(FENCE));
    assert.ok(
      batches.every((batch) => batch.length * 400 * 1024 < MAX_REQUEST_BYTES),
      `batches of ${batches.map((batch) => batch.length).join(', ')} writes of 400 KiB`,
    );
    assert.deepEqual(batches.flat(), writes);
    assert.throws(
      () => batchWrites([{ kind: 'put', key: 'blob', value: new Uint8Array(MAX_REQUEST_BYTES) }], []),
      /more than one etcd request may carry/,
    );
  });
});

if (etcdSkipReason !== undefined) console.log(`# skipping the etcd store tests: ${etcdSkipReason}`);

describe('the coordination store on a real etcd', { skip: etcdSkipReason }, () => {
  let etcd: TestEtcd;
  let store: EtcdStore;

  before(async () => {
    etcd = await startTestEtcd();
    store = new EtcdStore(new EtcdClient({ endpoints: [etcd.etcd.endpoint], requestTimeoutMs: 2000 }));
  });
  after(async () => {
    store?.client.close();
    await etcd?.close();
  });

  async function lead(prefix: string, nodeId: string): Promise<Leadership> {
    const lease = await store.grantLease(5);
    const outcome = await store.campaign(`${prefix}/leader`, nodeId, lease.id);
    assert.equal(outcome.kind, 'elected');
    return outcome.kind === 'elected' ? outcome.leadership : assert.fail('not elected');
  }

  it('writes hundreds of keys and megabytes in transactions etcd accepts, read back in one view', async () => {
    const leadership = await lead('many', 'm1');
    const small: Write[] = Array.from({ length: 300 }, (_, index) => ({
      kind: 'put',
      key: `many/shuffle/${String(index).padStart(4, '0')}`,
      value: bytesOf(`shuffle ${index}`),
      expectModRevision: 0,
    }));
    const smallOutcome = await store.write(leadership, small);
    assert.equal(smallOutcome.kind, 'written');
    assert.equal(smallOutcome.kind === 'written' && smallOutcome.revisions.length, 3);
    const large: Write[] = Array.from({ length: 12 }, (_, index) => ({
      kind: 'put',
      key: `many/worker/${index}`,
      value: new Uint8Array(300 * 1024).fill(index),
    }));
    const largeOutcome = await store.write(leadership, large);
    assert.equal(largeOutcome.kind, 'written', 'etcd refused a batch over its request limit');
    const shuffles = await store.list('many/shuffle/', 128);
    assert.equal(shuffles.values.length, 300);
    assert.equal(textOf(shuffles.values[299]!), 'shuffle 299');
    const workers = await store.list('many/worker/');
    assert.equal(workers.values.length, 12);
  });

  it('refuses a compare-and-swap on a stale mod revision, and applies nothing of its batch', async () => {
    const leadership = await lead('cas', 'm1');
    await store.write(leadership, [
      { kind: 'put', key: 'cas/app', value: bytesOf('v1'), expectModRevision: 0 },
    ]);
    const read = (await store.get('cas/app')).value!;
    const first = await store.write(leadership, [
      { kind: 'put', key: 'cas/app', value: bytesOf('v2'), expectModRevision: read.modRevision },
    ]);
    assert.equal(first.kind, 'written');
    const stale = await store.write(leadership, [
      { kind: 'put', key: 'cas/other', value: bytesOf('x') },
      { kind: 'delete', key: 'cas/app', expectModRevision: read.modRevision },
    ]);
    assert.deepEqual(stale, { kind: 'conflict', appliedBatches: 0 });
    assert.equal(textOf((await store.get('cas/app')).value!), 'v2');
    assert.equal((await store.get('cas/other')).value, undefined);
  });

  it('refuses the write of a tenure that ended, naming the leader key’s holder', async () => {
    const old = await lead('fence', 'm1');
    await store.resign(old);
    const next = await lead('fence', 'm2');
    const late = await store.write(old, [{ kind: 'put', key: 'fence/state', value: bytesOf('old') }]);
    assert.equal(late.kind, 'fenced');
    assert.equal(late.kind === 'fenced' && late.holder !== undefined && textOf(late.holder), 'm2');
    assert.equal((await store.get('fence/state')).value, undefined);
    assert.equal(
      (await store.write(next, [{ kind: 'put', key: 'fence/state', value: bytesOf('new') }])).kind,
      'written',
    );
  });

  it('etcd stopped: the leader reports it unreachable and is deposed; etcd back: it leads again', async () => {
    const reports: ElectionReport[] = [];
    const election = new LeaderElection(
      store,
      { leaderKey: 'outage/leader', nodeId: 'm1', ttlSeconds: 2, watchTimeoutMs: 2000 },
      coreRules,
      (report) => reports.push(report),
    );
    election.start();
    try {
      const first = await pollFor(
        () => reports.find((report) => report.kind === 'elected'),
        () =>
          `an election (reports: ${JSON.stringify(reports, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))})`,
      );
      // Counted before the stop: the leader may be deposed while etcd is still shutting down.
      const seen = reports.length;
      await etcd.etcd.stop();
      await pollFor(
        () => reports.slice(seen).find((report) => report.kind === 'deposed'),
        () => 'the leader deposed with etcd down',
      );
      await pollFor(
        () => reports.slice(seen).find((report) => report.kind === 'unreachable'),
        () => 'etcd reported unreachable',
      );
      assert.equal(election.current(), undefined);
      await assert.rejects(
        store.get('outage/leader'),
        (error) => error instanceof EtcdCallError && error.unreachable,
      );
      await etcd.etcd.start();
      const again = await pollFor(
        () => reports.slice(seen).find((report) => report.kind === 'elected'),
        () => 'an election once etcd is back',
        { timeoutMs: 30_000 },
      );
      assert.ok(again.kind === 'elected' && first.kind === 'elected', 'elected twice');
      assert.ok(again.leadership.createRevision > first.leadership.createRevision, 'a new tenure');
      const written = await store.write(again.leadership, [
        { kind: 'put', key: 'outage/state', value: bytesOf('after') },
      ]);
      assert.equal(written.kind, 'written');
      const refused = await store.write(first.leadership, [
        { kind: 'put', key: 'outage/state', value: bytesOf('before') },
      ]);
      assert.equal(refused.kind, 'fenced');
    } finally {
      await election.stop();
    }
  });
});
