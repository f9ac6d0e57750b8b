// A contender for leadership, as a child process of the election tests (runtime/ha/election.test.ts), on one of
// the two etcd clients compared there: `generated` (runtime/ha/: the core's leadership machine driven by HaDriver,
// its requests served on etcd's own schema over @grpc/grpc-js, as a master runs it) or `etcd3` (the npm client's
// election, loaded from SVC_ETCD3_DIR when a test run provides it). It prints one JSON line per event
// (`leader`, `lost`, `following`, `written`, `refused`) and takes `write <key> <value>` lines on stdin: a write
// fenced on the tenure it last won, whatever it believes now, so that the test sees what etcd does with it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { fenceCompares, type Fence } from '../../core/ha/fencing.ts';
import type { HaTiming } from '../../core/ha/timing.ts';
import { emptyApplications, emptyRegistry } from '../../core/lifecycle/index.ts';
import { EtcdClient } from '../ha/etcd-client.ts';
import { EtcdRequests } from '../ha/etcd-requests.ts';
import { HaDriver } from '../ha/ha-driver.ts';

const [candidate, endpoint, nodeId, ttlText, keyPrefix] = process.argv.slice(2);
const ttlSeconds = Number(ttlText);
const print = (line: Record<string, unknown>): void => {
  process.stdout.write(
    `${JSON.stringify({ node: nodeId, ...line }, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n`,
  );
};
const commands = createInterface({ input: process.stdin });
commands.on('close', () => process.exit(0));

type Writer = (key: string, value: string) => Promise<boolean>;

/** The default timing's proportions (core/ha/timing.ts) on a shorter lease, so that the tests take seconds. */
function contenderTiming(leaseTtlMs: number): HaTiming {
  return {
    leaseTtlMs,
    keepAliveIntervalMs: leaseTtlMs / 4,
    clockDrift: 0.01,
    stepDownMarginMs: leaseTtlMs / 8,
    campaignRetryMs: leaseTtlMs / 4,
  };
}

function generated(): Writer {
  const client = new EtcdClient({ endpoints: [endpoint!], requestTimeoutMs: 2000 });
  const requests = new EtcdRequests(client, { requestTimeoutMs: 2000, watchTimeoutMs: 2000 });
  const announce = `${nodeId!}@contender`;
  let fence: Fence | undefined;
  const driver = new HaDriver(
    {
      memberId: nodeId!,
      announce,
      election: `${keyPrefix!}/election/`,
      statePrefix: `${keyPrefix!}/state/`,
      timing: contenderTiming(ttlSeconds * 1000),
      emptyState: {
        workers: emptyRegistry(),
        applications: emptyApplications(),
        estimatedPartitionSize: 1,
        bookings: new Map(),
      },
    },
    requests,
    pino({ level: 'silent' }),
    {
      startActing: (_recovered, won) => {
        fence = won;
        print({ event: 'leader', createRevision: won.createRevision });
      },
      stopActing: (reason) => print({ event: 'lost', reason }),
      fatal: (reason) => print({ event: 'lost', reason }),
      leaderIs: (value) => {
        if (value !== null && value !== announce) print({ event: 'following', leader: value });
      },
    },
  );
  driver.start();
  let op = 0;
  return (key, value) => {
    const won = fence;
    if (won === undefined) return Promise.resolve(false);
    // The write goes out on the term this contender last won, whatever the machine believes now.
    const txn = { fence: fenceCompares(won), compares: [], ops: [{ kind: 'put' as const, key, value }] };
    return new Promise((resolve, reject) =>
      requests.serve({ kind: 'txn', op: --op, txn }, (result) => {
        if (result.kind === 'failed') reject(new Error(result.detail));
        else resolve(result.kind === 'committed');
      }),
    );
  };
}

interface Etcd3Module {
  Etcd3: new (options: { hosts: string }) => Etcd3Client;
}
interface Etcd3Client {
  election(name: string, ttl: number): { campaign(value: string): Etcd3Campaign };
  get(key: string): { exec(): Promise<{ kvs: { create_revision: string }[] }> };
  if(key: string, target: string, cmp: string, value: string): Etcd3Txn;
  put(key: string): { value(value: string): unknown };
}
interface Etcd3Txn {
  then(...ops: unknown[]): { commit(): Promise<{ succeeded: boolean }> };
}
interface Etcd3Campaign {
  on(event: 'elected', handler: () => void): void;
  on(event: 'error', handler: (error: Error) => void): void;
  getCampaignKey(): Promise<string>;
  resign(): Promise<void>;
}

function etcd3(): Writer {
  const dir = process.env.SVC_ETCD3_DIR;
  if (dir === undefined) throw new Error('SVC_ETCD3_DIR names no directory with etcd3 installed');
  const { Etcd3 } = createRequire(path.join(dir, 'package.json'))('etcd3') as Etcd3Module;
  const client = new Etcd3({ hosts: `http://${endpoint!}` });
  let tenure: { key: string; createRevision: string } | undefined;
  const campaign = client.election(keyPrefix!, ttlSeconds).campaign(nodeId!);
  void campaign.getCampaignKey().then(() => print({ event: 'following' }));
  campaign.on('elected', () => {
    void (async () => {
      const key = await campaign.getCampaignKey();
      const read = await client.get(key).exec();
      tenure = { key, createRevision: read.kvs[0]!.create_revision };
      print({ event: 'leader', createRevision: Number(tenure.createRevision) });
    })();
  });
  campaign.on('error', (error) => print({ event: 'lost', reason: error.message }));
  return async (key, value) => {
    if (tenure === undefined) return false;
    const answer = await client
      .if(tenure.key, 'Create', '==', tenure.createRevision)
      .then(client.put(key).value(value))
      .commit();
    return answer.succeeded;
  };
}

const write = candidate === 'etcd3' ? etcd3() : generated();
commands.on('line', (line) => {
  const [command, key, value] = line.trim().split(' ');
  if (command !== 'write' || key === undefined || value === undefined) return;
  write(key, value).then(
    (ok) => print({ event: ok ? 'written' : 'refused', key }),
    (error: unknown) => print({ event: 'refused', key, reason: String(error) }),
  );
});
print({ event: 'started', candidate });
