// The leader election against a real etcd, with two contenders as child processes, on each etcd client compared in
// docs/high-availability.md ("The etcd client"): the leader SIGKILLed, the other leads within the lease; the leader
// frozen with SIGSTOP past its lease, the other leads, and the frozen one's fenced write is refused when it resumes.
// The `etcd3` candidate runs when SVC_ETCD3_DIR names a directory where the npm etcd3 client is installed
// (npm install --prefix DIR etcd3@1.1.2); svc does not depend on it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { createInterface } from 'node:readline';
import { EtcdClient } from './etcd-client.ts';
import { EtcdStore } from './etcd-store.ts';
import { startTestEtcd, etcdSkipReason, type TestEtcd } from '../testing/etcd.ts';
import { within } from '../testing/deadline.ts';

const TSX = import.meta.resolve('tsx');
const CONTENDER = new URL('../testing/etcd-contender.ts', import.meta.url).pathname;
const TTL_SECONDS = 2;
/** etcd checks for expired leases every 500 ms; a contender watching the key campaigns at once. */
const TAKEOVER_BOUND_MS = TTL_SECONDS * 1000 + 1500;

interface ContenderLine {
  readonly node: string;
  readonly event: string;
  readonly key?: string;
  readonly reason?: string;
}

class Contender {
  readonly child: ChildProcess;
  readonly lines: ContenderLine[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(
    candidate: string,
    endpoint: string,
    readonly node: string,
    keyPrefix: string,
  ) {
    this.child = spawn(
      process.execPath,
      ['--import', TSX, CONTENDER, candidate, endpoint, node, String(TTL_SECONDS), keyPrefix],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    createInterface({ input: this.child.stdout! }).on('line', (text) => {
      this.lines.push(JSON.parse(text) as ContenderLine);
      for (const waiter of this.waiters) waiter();
    });
  }

  /** Resolves with the first line (from the `from`th on) that `match` accepts. */
  async waitFor(
    match: (line: ContenderLine) => boolean,
    what: string,
    timeoutMs = 20_000,
    from = 0,
  ): Promise<number> {
    const found = (): number => this.lines.findIndex((line, index) => index >= from && match(line));
    return within(
      new Promise<number>((resolve) => {
        const check = (): void => {
          const index = found();
          if (index >= 0) {
            this.waiters.delete(check);
            resolve(index);
          }
        };
        this.waiters.add(check);
        check();
      }),
      `${this.node}: ${what} (lines: ${JSON.stringify(this.lines)})`,
      timeoutMs,
    );
  }

  write(key: string, value: string): void {
    this.child.stdin!.write(`write ${key} ${value}\n`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
    await exited;
  }
}

const candidates = [
  { name: 'generated', skip: undefined },
  {
    name: 'etcd3',
    skip:
      process.env.SVC_ETCD3_DIR === undefined
        ? 'SVC_ETCD3_DIR is unset (npm install --prefix DIR etcd3@1.1.2 to compare the npm client)'
        : undefined,
  },
] as const;

if (etcdSkipReason !== undefined) console.log(`# skipping the etcd election tests: ${etcdSkipReason}`);

for (const candidate of candidates) {
  if (etcdSkipReason === undefined && candidate.skip !== undefined) {
    console.log(`# skipping the ${candidate.name} candidate: ${candidate.skip}`);
  }
  describe(
    `leader election on etcd, ${candidate.name} client (real etcd)`,
    {
      skip: etcdSkipReason ?? candidate.skip,
    },
    () => {
      let etcd: TestEtcd;
      let store: EtcdStore;
      const contenders: Contender[] = [];
      const start = (node: string, prefix: string): Contender => {
        const contender = new Contender(candidate.name, etcd.etcd.endpoint, node, prefix);
        contenders.push(contender);
        return contender;
      };

      before(async () => {
        etcd = await startTestEtcd();
        store = new EtcdStore(new EtcdClient({ endpoints: [etcd.etcd.endpoint], requestTimeoutMs: 5000 }));
      });
      after(async () => {
        await Promise.all(contenders.map((contender) => contender.stop()));
        store?.client.close();
        await etcd?.close();
      });

      it('the leader SIGKILLed: the other leads within the lease, and only it writes', async () => {
        const prefix = `kill-${candidate.name}`;
        const startedAt = Date.now();
        const first = start('a', prefix);
        await first.waitFor((line) => line.event === 'leader', 'leading');
        console.log(
          `# ${candidate.name}: a contender process led ${Date.now() - startedAt} ms after its spawn`,
        );
        const second = start('b', prefix);
        await second.waitFor((line) => line.event === 'following', 'campaigning behind the leader');
        const killedAt = Date.now();
        first.child.kill('SIGKILL');
        await second.waitFor(
          (line) => line.event === 'leader',
          'leading after the kill',
          TAKEOVER_BOUND_MS + 5000,
        );
        const takeoverMs = Date.now() - killedAt;
        console.log(
          `# ${candidate.name}: new leader ${takeoverMs} ms after the SIGKILL (lease ${TTL_SECONDS} s)`,
        );
        assert.ok(takeoverMs <= TAKEOVER_BOUND_MS, `took over after ${takeoverMs} ms`);
        second.write(`${prefix}/after`, 'b');
        await second.waitFor((line) => line.event === 'written', 'its fenced write applied');
      });

      it('the leader frozen past its lease: the other leads, the frozen one’s write is refused on resume', async () => {
        const prefix = `freeze-${candidate.name}`;
        const first = start('a', prefix);
        await first.waitFor((line) => line.event === 'leader', 'leading');
        first.write(`${prefix}/before`, 'a');
        await first.waitFor((line) => line.event === 'written', 'its fenced write applied while leading');
        const second = start('b', prefix);
        await second.waitFor((line) => line.event === 'following', 'campaigning behind the leader');
        first.child.kill('SIGSTOP');
        await second.waitFor(
          (line) => line.event === 'leader',
          'leading while the first is frozen',
          TAKEOVER_BOUND_MS + 5000,
        );
        const resumedFrom = first.lines.length;
        first.child.kill('SIGCONT');
        first.write(`${prefix}/late`, 'a');
        await first.waitFor(
          (line) => line.event === 'refused' && line.key === `${prefix}/late`,
          'its late write refused',
          20_000,
          resumedFrom,
        );
        assert.equal((await store.get(`${prefix}/late`)).value, undefined, 'the deposed leader wrote');
        // The frozen one must also learn that it no longer leads, and never claims to lead again beside the other.
        const resumedAt = Date.now();
        const lost = await first.waitFor(
          (line) => line.event === 'lost',
          'saying it lost the lease',
          20_000,
          resumedFrom,
        );
        console.log(
          `# ${candidate.name}: the resumed leader said it lost the lease ${Date.now() - resumedAt} ms after its ` +
            `refused write: ${first.lines[lost]!.reason ?? ''}`,
        );
        second.write(`${prefix}/after`, 'b');
        await second.waitFor((line) => line.event === 'written', 'the new leader’s fenced write applied');
        assert.ok(
          !first.lines.slice(resumedFrom).some((line) => line.event === 'leader'),
          'the resumed leader claimed to lead beside the new one',
        );
      });
    },
  );
}
