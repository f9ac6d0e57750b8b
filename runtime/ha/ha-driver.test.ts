// The core's leadership machine driven against a real etcd: one of two masters leads, its persists land in etcd as
// fenced keys, a successor recovers them when the leader dies, and a leader cut from etcd stops acting on its own
// clock while its late write is refused by etcd.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { fenceCompares, type Fence } from '../../core/ha/fencing.ts';
import type { HaConfig } from '../../core/ha/leadership.ts';
import type { StoreRequest, StoreResult } from '../../core/ha/store.ts';
import type { HaTiming } from '../../core/ha/timing.ts';
import { emptyApplications, emptyRegistry, registerShuffle } from '../../core/lifecycle/index.ts';
import {
  assembleDurable,
  durableLayout,
  MASTER_STATE_PREFIX,
  type KeyWrite,
} from '../../core/machines/master/layout.ts';
import type { MasterDurableState } from '../../core/machines/master/state.ts';
import { etcdSkipReason, startTestEtcd, type TestEtcd } from '../testing/etcd.ts';
import { pollFor } from '../testing/poll.ts';
import { EtcdClient } from './etcd-client.ts';
import { EtcdRequests } from './etcd-requests.ts';
import { HaDriver, type StoreRequests } from './ha-driver.ts';

const TIMING: HaTiming = {
  leaseTtlMs: 2_000,
  keepAliveIntervalMs: 400,
  clockDrift: 0.01,
  stepDownMarginMs: 200,
  campaignRetryMs: 300,
};

const EMPTY: MasterDurableState = {
  workers: emptyRegistry(),
  applications: emptyApplications(),
  estimatedPartitionSize: 1,
  bookings: new Map(),
};

function withShuffle(state: MasterDurableState, app: string, shuffle: number): MasterDurableState {
  const changed = registerShuffle(state.applications, app, shuffle, 0);
  return { ...state, applications: changed.registry };
}

/** What the master machine persists of `state` written whole (a restart's rewrite). */
function writesOf(state: MasterDurableState): KeyWrite[] {
  return [...durableLayout(MASTER_STATE_PREFIX, state)].map(([key, value]) => ({ key, value }));
}

function shufflesOf(recovered: ReadonlyMap<string, string>): string[] {
  const entries = [...recovered].map(([key, value]) => ({ key, value }));
  const state = assembleDurable(MASTER_STATE_PREFIX, entries, EMPTY);
  return [...state.applications.apps].flatMap(([app, entry]) =>
    entry.shuffles.map((shuffle) => `${String(app)}/${String(shuffle)}`),
  );
}

interface Member {
  readonly id: string;
  readonly driver: HaDriver;
  readonly client: EtcdClient;
  readonly log: string[];
  /** Every term it won, in order. */
  readonly fences: Fence[];
  recovered?: ReadonlyMap<string, string>;
  stopped?: string;
}

/** Requests that can be held (a leader cut from etcd) and let go later (its connection's late bytes). */
class Holdable implements StoreRequests {
  held = false;
  private readonly queue: (() => void)[] = [];
  constructor(private readonly inner: StoreRequests) {}
  serve(request: StoreRequest, answer: (result: StoreResult) => void): void {
    const send = () => this.inner.serve(request, answer);
    if (this.held) this.queue.push(send);
    else send();
  }
  release(): void {
    this.held = false;
    for (const send of this.queue.splice(0)) send();
  }
  close(): void {
    this.inner.close();
  }
}

if (etcdSkipReason !== undefined) console.log(`# skipping the HA driver tests: ${etcdSkipReason}`);

describe('the leadership machine on a real etcd', { skip: etcdSkipReason }, () => {
  let etcd: TestEtcd;
  const members: Member[] = [];
  let prefix = 0;

  before(async () => {
    etcd = await startTestEtcd('svc-ha-driver');
  });
  after(async () => {
    await etcd?.close();
  });
  afterEach(() => {
    for (const member of members.splice(0)) {
      member.driver.close();
      member.client.close();
    }
  });

  function member(id: string, wrap: (requests: StoreRequests) => StoreRequests = (r) => r): Member {
    const client = new EtcdClient({ endpoints: [etcd.etcd.endpoint], requestTimeoutMs: 1_000 });
    const config: HaConfig = {
      memberId: id,
      announce: `${id}@127.0.0.1:1${id.slice(1)}`,
      election: `/t${prefix}/election/`,
      statePrefix: `/t${prefix}/state/`,
      timing: TIMING,
      emptyState: EMPTY,
    };
    const log: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void log.push(line) });
    const self: Member = {
      id,
      client,
      log,
      fences: [],
      driver: new HaDriver(
        config,
        wrap(new EtcdRequests(client, { requestTimeoutMs: 1_000, watchTimeoutMs: 2_000 })),
        logger,
        {
          startActing: (recovered, fence) => {
            self.fences.push(fence);
            self.recovered = recovered;
            delete self.stopped;
          },
          stopActing: (reason) => {
            self.stopped = reason;
          },
          fatal: (reason) => assert.fail(`fatal: ${reason}`),
        },
      ),
    };
    members.push(self);
    return self;
  }

  it('elects one, writes through it, and hands its state to the next when it dies', async () => {
    prefix += 1;
    const a = member('m1');
    const b = member('m2');
    a.driver.start();
    const leader = await pollFor(
      () => (a.driver.acting ? a : undefined),
      () => 'a leader',
      { timeoutMs: 10_000 },
    );
    b.driver.start();
    await pollFor(
      () => b.driver.leader ?? undefined,
      () => 'the follower to learn the leader',
      {
        timeoutMs: 10_000,
      },
    );
    assert.equal(b.driver.leader, 'm1@127.0.0.1:11');
    assert.equal(b.driver.acting, false);
    let state = withShuffle(EMPTY, 'app-1', 3);
    await leader.driver.persist(writesOf(state));
    state = withShuffle(state, 'app-1', 4);
    await leader.driver.persist(writesOf(state));

    // Killed: no resign, the lease is left to expire at etcd.
    a.driver.close();
    const started = Date.now();
    await pollFor(
      () => (b.driver.acting ? b : undefined),
      () => 'the follower to lead',
      { timeoutMs: 10_000 },
    );
    assert.ok(Date.now() - started < TIMING.leaseTtlMs + 2_000, `took ${Date.now() - started} ms`);
    assert.deepEqual(shufflesOf(b.recovered!).sort(), ['app-1/3', 'app-1/4']);
  });

  it('a resigning leader hands over at once', async () => {
    prefix += 1;
    const a = member('m1');
    const b = member('m2');
    a.driver.start();
    await pollFor(
      () => (a.driver.acting ? a : undefined),
      () => 'a leader',
      { timeoutMs: 10_000 },
    );
    b.driver.start();
    await pollFor(
      () => b.driver.leader ?? undefined,
      () => 'the follower to learn the leader',
      {
        timeoutMs: 10_000,
      },
    );
    const started = Date.now();
    await a.driver.resign();
    await pollFor(
      () => (b.driver.acting ? b : undefined),
      () => 'the follower to lead',
      { timeoutMs: 10_000 },
    );
    assert.ok(Date.now() - started < 1_500, `took ${Date.now() - started} ms`);
  });

  it('a leader cut from etcd steps down on its own clock, and its late write is refused', async () => {
    prefix += 1;
    let cut: Holdable | undefined;
    const a = member('m1', (requests) => (cut = new Holdable(requests)));
    const b = member('m2');
    a.driver.start();
    await pollFor(
      () => (a.driver.acting ? a : undefined),
      () => 'a leader',
      { timeoutMs: 10_000 },
    );
    b.driver.start();
    const state = withShuffle(EMPTY, 'app-1', 1);
    await a.driver.persist(writesOf(state));

    cut!.held = true;
    // The write goes nowhere until the cut heals; it is never confirmed.
    let lateConfirmed = false;
    void a.driver.persist(writesOf(withShuffle(state, 'app-1', 2))).then(() => {
      lateConfirmed = true;
    });
    await pollFor(
      () => a.stopped,
      () => 'the cut leader to step down',
      { timeoutMs: 10_000 },
    );
    assert.match(a.stopped!, /not renewed in time/);
    assert.ok(
      a.log.some((line) => line.includes('"event":"ha.stepDown"')),
      'one ha.stepDown log line',
    );
    await pollFor(
      () => (b.driver.acting ? b : undefined),
      () => 'the other to lead',
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(shufflesOf(b.recovered!), ['app-1/1']);

    // Healed: the held write reaches etcd after another leads, and etcd refuses it by its fence.
    cut!.release();
    await b.driver.persist(writesOf(withShuffle(state, 'app-1', 5)));
    const stored = await new EtcdRequestsReader(b.client).shuffles(`/t${prefix}/state/`);
    assert.deepEqual(stored.sort(), ['1', '5']);
    assert.equal(lateConfirmed, false);
    assert.equal(a.driver.acting, false);
  });

  it('etcd stopped: the leader steps down saying why; etcd back: it leads again, and only its new term writes', async () => {
    prefix += 1;
    const a = member('m1');
    const fences = a.fences;
    a.driver.start();
    await pollFor(
      () => (a.driver.acting ? a : undefined),
      () => 'a leader',
      { timeoutMs: 10_000 },
    );
    await a.driver.persist(writesOf(withShuffle(EMPTY, 'app-1', 1)));
    await etcd.etcd.stop();
    await pollFor(
      () => a.stopped,
      () => 'the leader to step down with etcd down',
      { timeoutMs: 10_000 },
    );
    assert.match(a.stopped!, /not renewed in time.*coordination store has not answered since/);
    assert.equal(a.driver.acting, false);
    const stepDowns = a.log.filter((line) => line.includes('"event":"ha.stepDown"'));
    assert.equal(stepDowns.length, 1, 'one ha.stepDown line');

    await etcd.etcd.start();
    await pollFor(
      () => (fences.length === 2 && a.driver.acting ? a : undefined),
      () => 'a leader once etcd is back',
      { timeoutMs: 30_000 },
    );
    assert.ok(fences[1]!.createRevision > fences[0]!.createRevision, 'a new term');
    assert.deepEqual(shufflesOf(a.recovered!), ['app-1/1'], 'the state it wrote before the outage');
    const requests = new EtcdRequests(a.client, { requestTimeoutMs: 1_000, watchTimeoutMs: 1_000 });
    const put = (fence: Fence): Promise<StoreResult> =>
      new Promise((resolve) =>
        requests.serve(
          {
            kind: 'txn',
            op: 1,
            txn: {
              fence: fenceCompares(fence),
              compares: [],
              ops: [{ kind: 'put', key: `/t${prefix}/x`, value: 'v' }],
            },
          },
          resolve,
        ),
      );
    assert.equal((await put(fences[1]!)).kind, 'committed');
    const late = await put(fences[0]!);
    assert.equal(
      late.kind === 'refused' && !late.fenceHeld,
      true,
      'the old term’s write refused by its fence',
    );
  });
});

/** Reads the stored shuffle keys directly, to see what etcd holds whatever the masters believe. */
class EtcdRequestsReader {
  constructor(private readonly client: EtcdClient) {}
  async shuffles(statePrefix: string): Promise<string[]> {
    const requests = new EtcdRequests(this.client, { requestTimeoutMs: 1_000, watchTimeoutMs: 1_000 });
    const result = await new Promise<StoreResult>((resolve) =>
      requests.serve({ kind: 'getPrefix', op: 1, prefix: `${statePrefix}shuffles/` }, resolve),
    );
    assert.equal(result.kind, 'range');
    return result.kind === 'range' ? result.keys.map((k) => k.key.split('/').at(-1)!) : [];
  }
}
