// The store requests of the leadership machine on a real etcd: the core's write plans (core/ha/key-layout.ts) are
// transactions etcd accepts, however many keys and bytes; a compare-and-swap on a stale revision applies nothing of
// its transaction; the write of a term that ended is refused by its fence. The terms come from the machine itself,
// driven by HaDriver, as a master runs it.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { fenceCompares, type Fence, type KnownKey } from '../../core/ha/fencing.ts';
import { knownFromRange, planWrites } from '../../core/ha/key-layout.ts';
import type { StoreRequest, StoreResult, Txn } from '../../core/ha/store.ts';
import type { HaTiming } from '../../core/ha/timing.ts';
import { emptyApplications, emptyRegistry } from '../../core/lifecycle/index.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from '../testing/etcd.ts';
import { pollFor } from '../testing/poll.ts';
import { EtcdClient } from './etcd-client.ts';
import { EtcdRequests } from './etcd-requests.ts';
import { HaDriver } from './ha-driver.ts';

const TIMING: HaTiming = {
  leaseTtlMs: 4_000,
  keepAliveIntervalMs: 800,
  clockDrift: 0.01,
  stepDownMarginMs: 400,
  campaignRetryMs: 600,
};

if (etcdSkipReason !== undefined) console.log(`# skipping the etcd store tests: ${etcdSkipReason}`);

describe('the store requests on a real etcd', { skip: etcdSkipReason }, () => {
  let etcd: TestEtcd;
  let client: EtcdClient;
  let requests: EtcdRequests;
  const drivers: HaDriver[] = [];
  let op = 0;

  before(async () => {
    etcd = await startTestEtcd('svc-etcd-store');
    client = new EtcdClient({ endpoints: [etcd.etcd.endpoint], requestTimeoutMs: 5_000 });
    requests = new EtcdRequests(client, { requestTimeoutMs: 5_000, watchTimeoutMs: 5_000 });
  });
  afterEach(() => {
    for (const driver of drivers.splice(0)) driver.close();
  });
  after(async () => {
    requests?.close();
    client?.close();
    await etcd?.close();
  });

  function serve(request: StoreRequest): Promise<StoreResult> {
    return new Promise((resolve) => requests.serve(request, resolve));
  }

  async function apply(txn: Txn): Promise<StoreResult> {
    op += 1;
    return serve({ kind: 'txn', op, txn });
  }

  async function read(prefix: string): Promise<Map<string, KnownKey>> {
    op += 1;
    const range = await serve({ kind: 'getPrefix', op, prefix });
    assert.equal(range.kind, 'range');
    return range.kind === 'range' ? knownFromRange(range.keys) : new Map();
  }

  /** A term won by the leadership machine: its driver, and the fence its writes carry. */
  async function lead(election: string, id: string): Promise<{ driver: HaDriver; fence: Fence }> {
    let fence: Fence | undefined;
    const memberClient = new EtcdClient({ endpoints: [etcd.etcd.endpoint], requestTimeoutMs: 2_000 });
    const driver = new HaDriver(
      {
        memberId: id,
        announce: id,
        election: `${election}/election/`,
        statePrefix: `${election}/state/`,
        timing: TIMING,
        emptyState: {
          workers: emptyRegistry(),
          applications: emptyApplications(),
          estimatedPartitionSize: 1,
          bookings: new Map(),
        },
      },
      new EtcdRequests(memberClient, { requestTimeoutMs: 2_000, watchTimeoutMs: 2_000 }),
      pino({ level: 'silent' }),
      {
        startActing: (_recovered, won) => {
          fence = won;
        },
        stopActing: () => undefined,
        fatal: (reason) => assert.fail(`fatal: ${reason}`),
      },
    );
    const close = driver.close.bind(driver);
    driver.close = () => {
      close();
      memberClient.close();
    };
    drivers.push(driver);
    driver.start();
    return {
      driver,
      fence: await pollFor(
        () => fence,
        () => `${id} to lead ${election}`,
      ),
    };
  }

  it('applies the core’s plan for hundreds of keys and megabytes, each transaction within etcd’s limits', async () => {
    const { fence } = await lead('/many', 'm1');
    const layout = new Map<string, string>();
    for (let index = 0; index < 300; index += 1) {
      layout.set(`/many/data/shuffles/a/${String(index).padStart(4, '0')}`, `shuffle ${index}`);
    }
    for (let index = 0; index < 12; index += 1) {
      layout.set(`/many/data/workers/w${index}`, String.fromCharCode(97 + index).repeat(300 * 1024));
    }
    const plan = planWrites('/many/data/', new Map(), layout, fence);
    assert.equal(plan.kind, 'txns');
    const txns = plan.kind === 'txns' ? plan.txns : [];
    assert.ok(txns.length >= 3, `${txns.length} transactions`);
    for (const txn of txns) assert.equal((await apply(txn)).kind, 'committed', 'etcd refused a transaction');
    const stored = await read('/many/data/');
    assert.equal(stored.size, 312);
    assert.equal(stored.get('/many/data/shuffles/a/0299')?.value, 'shuffle 299');
  });

  it('refuses a compare-and-swap on a stale revision, and applies nothing of its transaction', async () => {
    const { fence } = await lead('/cas', 'm1');
    const first = planWrites('/cas/data/', new Map(), new Map([['/cas/data/app', 'v1']]), fence);
    assert.ok(first.kind === 'txns', 'a plan');
    assert.equal((await apply(first.txns[0]!)).kind, 'committed');
    const known = await read('/cas/data/');
    const second = planWrites('/cas/data/', known, new Map([['/cas/data/app', 'v2']]), fence);
    assert.ok(second.kind === 'txns', 'a plan');
    assert.equal((await apply(second.txns[0]!)).kind, 'committed');
    // Planned on the first read: the app's revision has moved since.
    const stale = planWrites(
      '/cas/data/',
      known,
      new Map([
        ['/cas/data/app', 'v3'],
        ['/cas/data/other', 'x'],
      ]),
      fence,
    );
    assert.ok(stale.kind === 'txns', 'a plan');
    const refused = await apply(stale.txns[0]!);
    assert.equal(refused.kind, 'refused');
    assert.equal(refused.kind === 'refused' && refused.fenceHeld, true, 'the fence still held');
    const after = await read('/cas/data/');
    assert.equal(after.get('/cas/data/app')?.value, 'v2');
    assert.equal(after.has('/cas/data/other'), false);
  });

  it('refuses the write of a term that ended, telling it from a conflict', async () => {
    const old = await lead('/fence', 'm1');
    await old.driver.resign();
    const next = await lead('/fence', 'm2');
    assert.ok(next.fence.createRevision > old.fence.createRevision, 'a younger term');
    const write = (fence: Fence, value: string): Txn => ({
      fence: fenceCompares(fence),
      compares: [],
      ops: [{ kind: 'put', key: '/fence/data/state', value }],
    });
    const late = await apply(write(old.fence, 'old'));
    assert.equal(late.kind, 'refused');
    assert.equal(late.kind === 'refused' && late.fenceHeld, false, 'refused by its fence');
    assert.equal((await read('/fence/data/')).size, 0);
    assert.equal((await apply(write(next.fence, 'new'))).kind, 'committed');
  });
});
