// A contender for a leader key, as a child process of the election tests (runtime/ha/election.test.ts), on one of
// the two etcd clients compared there: `generated` (runtime/ha/, etcd's own schema over @grpc/grpc-js) or `etcd3`
// (the npm client, loaded from SVC_ETCD3_DIR when a test run provides it). It prints one JSON line per event
// (`leader`, `lost`, `following`, `written`, `refused`) and takes `write <key> <value>` lines on stdin: a write
// fenced on the tenure it last won, whatever it believes now, so that the test sees what etcd does with it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { EtcdClient } from '../ha/etcd-client.ts';
import { EtcdStore, bytesOf, type Leadership } from '../ha/etcd-store.ts';
import { LeaderElection } from '../ha/leader-election.ts';
import { coreRules } from '../ha/leadership-rules.ts';

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

function generated(): Writer {
  const client = new EtcdClient({ endpoints: [endpoint!], requestTimeoutMs: 2000 });
  const store = new EtcdStore(client);
  let tenure: Leadership | undefined;
  const election = new LeaderElection(
    store,
    { leaderKey: `${keyPrefix!}/leader`, nodeId: nodeId!, ttlSeconds, watchTimeoutMs: 2000 },
    coreRules,
    (report) => {
      if (report.kind === 'elected') {
        tenure = report.leadership;
        print({ event: 'leader', createRevision: report.leadership.createRevision });
      } else if (report.kind === 'deposed') print({ event: 'lost', reason: report.reason });
      else if (report.kind === 'following') print({ event: 'following', leader: report.leader });
      else print({ event: 'unreachable', reason: report.reason });
    },
  );
  election.start();
  return async (key, value) => {
    if (tenure === undefined) return false;
    const outcome = await store.write(tenure, [{ kind: 'put', key, value: bytesOf(value) }]);
    return outcome.kind === 'written';
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
