import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { masterUrlScheme } from '../../core/release/other-changes.ts';
import { parseRelease } from '../../core/release/version.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import { FaultProxy } from './fault-proxy.ts';
import { stablePorts } from './stable-ports.ts';
import { STARTUP_WAIT_MS, ServerProcess, type LogLine } from './server-process.ts';
import type { Host, HostNetwork } from './hosts.ts';
import { planMasterGroup, type MasterGroup, type MasterGroupOptions } from './master-group.ts';
import { EtcdProcess, etcdUnavailable } from '../ha/etcd-process.ts';

/** Starts of a worker on freshly drawn ports before a port taken in between fails the start for good. */
const FRESH_PORT_ATTEMPTS = 3;
/** Where a worker's data ports listen when fault proxies stand in front of them (the proxies take 127.0.0.1). */
const PROXIED_BIND_HOST = '127.0.0.2';
/** A worker's data services, in the order of its id's ports. */
const DATA_SERVICES = ['rpc', 'push', 'fetch', 'replicate'] as const;

/** Where a cluster keeps partition files: local disks, the memory tier, or a shared DFS directory. */
export type Tier = 'disk' | 'memory' | 'dfs';

export interface LocalClusterOptions {
  readonly workers: number;
  /** Default: a new directory under the system's temporary directory, removed by stop(). */
  readonly dir?: string;
  readonly tier?: Tier;
  /** Extra `key=value` settings for every server, every master, every worker. */
  readonly conf?: readonly string[];
  readonly masterConf?: readonly string[];
  readonly workerConf?: readonly string[];
  /**
   * The command line the servers run (`… master`, `… worker` appended) instead of this copy's own: the compiled
   * build a benchmark measures (bench/dataplane/compiled.ts) while it runs from the source.
   */
  readonly serverCommand?: readonly string[];
  /** A properties file for each worker, by index (`--conf-file`; `startWorker`'s `confFile` replaces it). */
  readonly workerConfFiles?: readonly string[];
  readonly logLevel?: string;
  /** The release every server presents (`--release`); default the current one. */
  readonly release?: string;
  /** Keep the directory at stop() (for `--keep` or a failing test's logs). */
  readonly keepDir?: boolean;
  /**
   * Application authentication (svc.auth.enabled) on every server, with an internal secret drawn at random and
   * written to `<dir>/internal-secret` (svc.auth.internal.secretFile, mode 0600). Applications then need
   * `clientAuthConf()` (and their executors the application's secret).
   */
  readonly auth?: boolean;
  /**
   * Test only: every server runs with this deliberate bug of core/planted-bugs.ts (runtime/testing/test-server.ts),
   * to prove that a test or the chaos soak catches it.
   */
  readonly plantedBug?: PlantedBug;
  /**
   * Test only: every write of a server's durable store waits this long before it starts (a slow disk), so that a
   * kill right after an acknowledgement lands before a write not waited for (runtime/durable-ack.test.ts).
   */
  readonly durableWriteDelayMs?: number;
  /**
   * Test only: every worker overwrites each receive body given back to its pool and logs its first reuse
   * (`worker.receiveBodies.reused`), so that a body returned while a write or forward still reads it corrupts the
   * data visibly (runtime/receive-bodies.test.ts).
   */
  readonly scribbleReturnedBodies?: boolean;
  /**
   * Test only: a fault proxy (runtime/cluster/fault-proxy.ts) in front of each data port of each worker (`proxies`):
   * the worker listens on 127.0.0.2 and its id names 127.0.0.1, where the proxy listens on the same port, so that
   * masters, applications and other workers all reach it through the proxy.
   */
  readonly faultProxies?: boolean;
  /**
   * Runs each server on a host of its own on this network (runtime/cluster/hosts.ts): the master on host 0, worker
   * `i` on host `i + 1`, so a test can cut a worker off as a real network does. The caller creates and destroys it.
   */
  readonly hosts?: HostNetwork;
  /** Worker `i`'s rack (`svc.worker.networkLocation`), by index; a worker beyond the list keeps the default. */
  readonly racks?: readonly string[];
  /**
   * Runs the masters as a high-availability group on this etcd (docs/high-availability.md): `master` is member m1,
   * which campaigns first and leads; the others (`followers`) start once it serves and follow it. Workers and
   * `masterUrl` name the whole group (`svc://h1:p1,h2:p2,…`) and follow its leader. With `hosts`, each member has a
   * host of its own (`memberHost`: m1 on host 0, m2… after the workers' hosts) and so has the etcd the cluster
   * starts (the host after the members'), so that a partition can cut the leader off from etcd and everyone.
   */
  readonly masterGroup?: MasterGroupOptions;
}

/** The namespace hosts a cluster needs: the master's, each worker's, the other members' and etcd's. */
function hostsNeeded(options: LocalClusterOptions): number {
  const group = options.masterGroup;
  if (group === undefined) return options.workers + 1;
  return options.workers + group.members + (group.etcdEndpoint === undefined ? 1 : 0);
}

/** The client settings for a cluster started with `auth`: the application draws its own secret. */
export function clientAuthConf(): Record<string, string> {
  return { 'svc.auth.enabled': 'true' };
}

/** The client settings that make an application use a cluster's tier. */
export function clientTierConf(tier: Tier): Record<string, string> {
  switch (tier) {
    case 'disk':
      return { 'svc.storage.availableTypes': 'HDD' };
    case 'memory':
      return { 'svc.storage.availableTypes': 'MEMORY,HDD' };
    case 'dfs':
      return { 'svc.storage.availableTypes': 'HDFS' };
  }
}

/** Where a node's management interface answers: `/api/v1`, its Prometheus metrics and Swagger UI. */
export interface NodeHttpAddresses {
  /** `http://127.0.0.1:<port>`. */
  readonly base: string;
  readonly api: string;
  /** Absent when the node's metrics are off (`svc.metrics.enabled=false`). */
  readonly metrics?: string;
  readonly swagger: string;
}

/** The last value a `key=value` list gives `key`. */
function confValue(settings: readonly string[], key: string): string | undefined {
  let value: string | undefined;
  for (const setting of settings) {
    const at = setting.indexOf('=');
    if (at > 0 && setting.slice(0, at).trim() === key) value = setting.slice(at + 1).trim();
  }
  return value;
}

function httpAddresses(base: string, settings: readonly string[]): NodeHttpAddresses {
  const metricsOff = confValue(settings, 'svc.metrics.enabled')?.toLowerCase() === 'false';
  const metricsPath = confValue(settings, 'svc.metrics.prometheus.path') ?? '/metrics/prometheus';
  return {
    base,
    api: `${base}/api/v1`,
    ...(metricsOff ? {} : { metrics: `${base}${metricsPath}` }),
    swagger: `${base}/swagger`,
  };
}

/**
 * A master and workers as child processes on loopback, each on ports the system picked, with their data under one
 * directory. Used by `svc demo` (npm start) and by the runtime tests; everything it starts, stop() stops.
 */
export class LocalCluster {
  readonly workers: ServerProcess[] = [];
  /** Each worker's node id (host:rpc:push:fetch:replicate), by index. */
  readonly workerIds: string[] = [];
  master!: ServerProcess;
  /** With `masterGroup`: the members other than `master` (m2…), which follow it. */
  readonly followers: ServerProcess[] = [];
  masterPort = 0;
  /** The bound port of the master's management interface (HTTP), from its `listening` line. */
  masterHttpPort = 0;
  /** Each worker's management-interface port, by index. */
  readonly workerHttpPorts: number[] = [];
  /** With `faultProxies`: worker `index`'s proxies, one per data port (rpc, push, fetch, replicate). */
  readonly proxies: FaultProxy[][] = [];
  /** Every server process this cluster started, restarts included (to check that none is left running). */
  readonly started: ServerProcess[] = [];
  private masterStarts = 0;
  private readonly workerStarts: number[] = [];
  private group: MasterGroup | undefined;
  /** The etcd this cluster started for its master group (none: no group, or the caller's etcd). */
  private etcd: EtcdProcess | undefined;

  private constructor(
    readonly options: LocalClusterOptions,
    readonly dir: string,
  ) {}

  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    if (options.hosts !== undefined && options.faultProxies === true)
      throw new Error('a cluster runs on namespace hosts or behind fault proxies, not both');
    if (options.hosts !== undefined && options.hosts.hosts.length < hostsNeeded(options))
      throw new RangeError(
        `${options.workers} workers and ${options.masterGroup === undefined ? 'a master' : 'a master group'} need ` +
          `${hostsNeeded(options)} hosts`,
      );
    const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'svc-cluster-'));
    mkdirSync(path.join(dir, 'logs'), { recursive: true });
    if (options.auth === true) {
      writeFileSync(path.join(dir, 'internal-secret'), `${randomBytes(32).toString('base64url')}\n`, {
        mode: 0o600,
      });
    }
    const cluster = new LocalCluster(options, dir);
    try {
      if (options.masterGroup !== undefined) {
        let etcdEndpoint = options.masterGroup.etcdEndpoint;
        if (etcdEndpoint === undefined) {
          const missing = etcdUnavailable();
          if (missing !== undefined) throw new Error(`a master group needs etcd: ${missing}`);
          const etcdHost = cluster.etcdHost;
          cluster.etcd = await EtcdProcess.start({
            dataDir: path.join(dir, 'etcd'),
            name: 'svc-local-etcd',
            ...(etcdHost === undefined ? {} : { host: etcdHost.address, namespace: etcdHost.namespace }),
          });
          etcdEndpoint = cluster.etcd.endpoint;
        }
        const members = options.masterGroup.members;
        cluster.group = await planMasterGroup({
          etcdEndpoint,
          members,
          ...(options.hosts === undefined
            ? {}
            : {
                addresses: Array.from(
                  { length: members },
                  (_, index) => cluster.memberHost(`m${index + 1}`)!.address,
                ),
              }),
        });
      }
      await cluster.startMaster(cluster.group?.ports.get('m1') ?? 0);
      await Promise.all([
        ...Array.from({ length: options.workers }, (_, index) => cluster.startWorker(index)),
        ...(cluster.group?.ids.slice(1) ?? []).map((id) => cluster.startFollower(id)),
      ]);
      await cluster.waitForRegistrations();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** The host the master runs on, when the cluster runs on namespace hosts. */
  get masterHost(): Host | undefined {
    return this.options.hosts?.hosts[0];
  }

  /**
   * The host member `id` (m1, m2, …) of the master group runs on, on namespace hosts: m1 is the master on host 0, the
   * others follow the workers' hosts, so that a worker's host stays where it is without a group.
   */
  memberHost(id: string): Host | undefined {
    const network = this.options.hosts;
    if (network === undefined) return undefined;
    const number = Number(id.slice(1));
    const host = network.hosts[number === 1 ? 0 : this.options.workers + number - 1];
    if (host === undefined) throw new RangeError(`member ${id} has no host`);
    return host;
  }

  /** The host of the etcd the cluster starts for its group, on namespace hosts: the one after the members'. */
  get etcdHost(): Host | undefined {
    const members = this.options.masterGroup?.members;
    if (members === undefined || this.options.masterGroup?.etcdEndpoint !== undefined) return undefined;
    return this.options.hosts?.hosts[this.options.workers + members];
  }

  /** The host worker `index` runs on, when the cluster runs on namespace hosts. */
  workerHost(index: number): Host | undefined {
    const host = this.options.hosts?.hosts[index + 1];
    if (this.options.hosts !== undefined && host === undefined)
      throw new RangeError(`worker ${index} has no host: the network has ${this.options.hosts.hosts.length}`);
    return host;
  }

  private get masterAddress(): string {
    return this.masterHost?.address ?? '127.0.0.1';
  }

  /** The master, or with `masterGroup` every member of the group (`svc://h1:p1,h2:p2,…`), whose leader clients follow. */
  get masterUrl(): string {
    return `svc://${this.masterAddresses}`;
  }

  /** The master URL a server presenting `release` understands: before 0.3.0 only `rss://` (contract 9.3). */
  masterUrlFor(release = this.options.release): string {
    const scheme = release === undefined ? 'svc' : masterUrlScheme(parseRelease(release));
    return `${scheme}://${this.masterAddresses}`;
  }

  private get masterAddresses(): string {
    return this.group?.addresses.join(',') ?? `${this.masterAddress}:${this.masterPort}`;
  }

  /** The ids of the group's members (m1, m2, …); none without `masterGroup`. */
  get memberIds(): readonly string[] {
    return this.group?.ids ?? [];
  }

  /** The latest process of member `id` of the group (m1 is `master`). */
  member(id: string): ServerProcess {
    const process = id === 'm1' ? this.master : this.followers[this.memberIndex(id) - 1];
    if (process === undefined) throw new RangeError(`${id} is not a member of the group`);
    return process;
  }

  /** `http://<address>:<port>` of member `id`'s management interface (its `listening` or `ha.notLeaderHttp` line). */
  memberHttpUrl(id: string): string | undefined {
    const process = this.member(id);
    const line = process.seen((l) => l.event === 'listening' || l.event === 'ha.notLeaderHttp').at(-1)
      ?.http as { port?: number } | undefined;
    if (line?.port === undefined) return undefined;
    return `http://${this.memberHost(id)?.address ?? '127.0.0.1'}:${line.port}`;
  }

  /**
   * Starts member `id` of the group again (after it exited: a supervisor's restart), on its host and port, and
   * resolves once it is up: it follows the leader, leads, or (cut off from etcd) has opened its ports.
   */
  async restartMember(id: string): Promise<ServerProcess> {
    if (this.member(id).running) throw new Error(`member ${id} is still running`);
    const process = id === 'm1' ? this.spawnMaster(this.masterPort) : this.spawnFollower(id);
    await process.waitFor(
      (line) => ['ha.following', 'listening', 'ha.notLeaderHttp'].includes(line.event ?? ''),
      'its start as a member of the group',
      0,
      STARTUP_WAIT_MS,
    );
    return process;
  }

  private memberIndex(id: string): number {
    const index = this.group?.ids.indexOf(id) ?? -1;
    if (index < 0) throw new RangeError(`${id} is not a member of the group`);
    return index;
  }

  /** `http://<address>:<port>` of the master's management interface. */
  get masterHttpUrl(): string {
    return `http://${this.masterAddress}:${this.masterHttpPort}`;
  }

  /** `http://<address>:<port>` of worker `index`'s management interface. */
  workerHttpUrl(index: number): string {
    return `http://${this.workerHost(index)?.address ?? '127.0.0.1'}:${this.workerHttpPorts[index] ?? 0}`;
  }

  get tier(): Tier {
    return this.options.tier ?? 'disk';
  }

  /** Where the servers of a cluster started with `auth` read the internal secret. */
  get internalSecretFile(): string | undefined {
    return this.options.auth === true ? path.join(this.dir, 'internal-secret') : undefined;
  }

  /** ServerProcess's `command` when the servers run another build than this copy (`serverCommand`). */
  private serverCommand(): { command?: readonly string[] } {
    const command = this.options.serverCommand;
    if (command === undefined) return {};
    const { plantedBug, durableWriteDelayMs, scribbleReturnedBodies, faultProxies } = this.options;
    const hooked = plantedBug !== undefined || durableWriteDelayMs !== undefined;
    if (hooked || scribbleReturnedBodies === true || faultProxies === true) {
      // Those hooks live in the test server's entry (runtime/cluster/server-process.ts), which a command replaces.
      throw new Error('serverCommand cannot be combined with a testing hook (plantedBug, faultProxies, …)');
    }
    return { command };
  }

  private testing(role: 'master' | 'worker'): {
    plantedBug?: string;
    bindHost?: string;
    durableWriteDelayMs?: number;
    scribbleReturnedBodies?: boolean;
  } {
    return {
      ...(role === 'worker' && this.options.scribbleReturnedBodies === true
        ? { scribbleReturnedBodies: true }
        : {}),
      ...(this.options.plantedBug === undefined ? {} : { plantedBug: this.options.plantedBug }),
      ...(this.options.durableWriteDelayMs === undefined
        ? {}
        : { durableWriteDelayMs: this.options.durableWriteDelayMs }),
      ...(role === 'worker' && this.options.faultProxies === true ? { bindHost: PROXIED_BIND_HOST } : {}),
    };
  }

  /** The server arguments every node shares; `release` overrides the cluster's (a node upgraded in a rolling upgrade). */
  private common(release = this.options.release): string[] {
    const secretFile = this.internalSecretFile;
    const auth =
      secretFile === undefined ? [] : ['svc.auth.enabled=true', `svc.auth.internal.secretFile=${secretFile}`];
    return [
      '--log-level',
      this.options.logLevel ?? 'info',
      ...(release === undefined ? [] : ['--release', release]),
      ...[...auth, ...(this.options.conf ?? [])].flatMap((c) => ['--conf', c]),
    ];
  }

  private tierConf(index: number): string[] {
    const own = path.join(this.dir, `worker-${index}`);
    switch (this.tier) {
      case 'disk':
        return [`svc.worker.storage.dirs=${path.join(own, 'disk-1')}`];
      case 'memory':
        return [
          `svc.worker.storage.dirs=${path.join(own, 'disk-1')}`,
          'svc.worker.directMemoryRatioForMemoryFileStorage=0.5',
        ];
      case 'dfs':
        return [`svc.storage.hdfs.dir=${path.join(this.dir, 'dfs')}`];
    }
  }

  private async startMaster(port: number, release?: string): Promise<void> {
    const master = this.spawnMaster(port, release);
    const line = await master.waitForEvent('listening', STARTUP_WAIT_MS);
    this.masterPort = (line.rpc as { port: number }).port;
    this.masterHttpPort = (line.http as { port: number }).port;
  }

  /** A new process of the master (member m1 of a group), which `master` names from now on. */
  private spawnMaster(port: number, release?: string): ServerProcess {
    this.masterStarts += 1;
    const settings = [
      `svc.master.host=${this.masterAddress}`,
      `svc.master.port=${port}`,
      `svc.master.http.host=${this.masterAddress}`,
      'svc.master.http.port=0',
      `svc.master.state.dir=${path.join(this.dir, 'master-state')}`,
      ...(this.tier === 'dfs' ? [`svc.storage.hdfs.dir=${path.join(this.dir, 'dfs')}`] : []),
      ...(this.group?.settings('m1') ?? []),
      ...(this.options.masterConf ?? []),
    ];
    this.master = new ServerProcess({
      name: 'master',
      args: ['master', ...this.common(release), ...settings.flatMap((c) => ['--conf', c])],
      logFile: path.join(this.dir, 'logs', `master-${this.masterStarts}.log`),
      ...(this.masterHost === undefined ? {} : { namespace: this.masterHost.namespace }),
      ...this.serverCommand(),
      testing: this.testing('master'),
    });
    this.started.push(this.master);
    return this.master;
  }

  /** Starts member `id` of the master group, and resolves once it follows the leader. */
  private async startFollower(id: string): Promise<ServerProcess> {
    const follower = this.spawnFollower(id);
    await follower.waitForEvent('ha.following', STARTUP_WAIT_MS);
    return follower;
  }

  /** A new process of member `id` (not m1) on its host, which `followers` (and `member(id)`) name from now on. */
  private spawnFollower(id: string): ServerProcess {
    const host = this.memberHost(id);
    const address = host?.address ?? this.masterAddress;
    const starts = this.started.filter((server) => server.options.name === `master-${id}`).length;
    const settings = [
      `svc.master.host=${address}`,
      `svc.master.port=${this.group!.ports.get(id)!}`,
      `svc.master.http.host=${address}`,
      'svc.master.http.port=0',
      `svc.master.state.dir=${path.join(this.dir, `master-state-${id}`)}`,
      ...(this.tier === 'dfs' ? [`svc.storage.hdfs.dir=${path.join(this.dir, 'dfs')}`] : []),
      ...this.group!.settings(id),
      ...(this.options.masterConf ?? []),
    ];
    const follower = new ServerProcess({
      name: `master-${id}`,
      args: ['master', ...this.common(), ...settings.flatMap((c) => ['--conf', c])],
      // The first start's file keeps the name it always had; a restart's gets its number.
      logFile: path.join(this.dir, 'logs', `master-${id}${starts === 0 ? '' : `-${starts + 1}`}.log`),
      ...(host === undefined ? {} : { namespace: host.namespace }),
      ...this.serverCommand(),
      testing: this.testing('master'),
    });
    this.followers[this.memberIndex(id) - 1] = follower;
    this.started.push(follower);
    return follower;
  }

  /**
   * Starts worker `index` (again, on the ports it had when `samePorts`: a worker's id is its address, and only a
   * worker that comes back under the same id finds its files again after a graceful shutdown), presenting `release`
   * and reading `confFile` (`--conf-file`) when given.
   */
  async startWorker(
    index: number,
    options: { samePorts?: boolean; release?: string; confFile?: string } = {},
  ): Promise<ServerProcess> {
    const previous = this.workerIds[index];
    const host = this.workerHost(index);
    if (this.options.faultProxies === true) {
      const proxied = await this.proxyWorker(index, options.samePorts === true);
      return this.spawnWorker(index, proxied.map(String), options);
    }
    if (options.samePorts === true && previous !== undefined) {
      return this.spawnWorker(index, previous.split(':').slice(1), options);
    }
    // A host's namespace has its own ports: the kernel picks there.
    if (host !== undefined) return this.spawnWorker(index, ['0', '0', '0', '0'], options);
    // Fresh ports below the kernel's ephemeral range, so that the worker can come back on them (./stable-ports.ts);
    // drawn again if another test took one in between.
    for (let attempt = 1; ; attempt += 1) {
      const ports = (await stablePorts(4, '127.0.0.1')).map(String);
      try {
        return await this.spawnWorker(index, ports, options);
      } catch (error) {
        const taken = (error as Error).message.includes('EADDRINUSE');
        if (!taken || attempt === FRESH_PORT_ATTEMPTS) throw error;
      }
    }
  }

  private async spawnWorker(
    index: number,
    ports: readonly string[],
    options: { release?: string; confFile?: string },
  ): Promise<ServerProcess> {
    const own = path.join(this.dir, `worker-${index}`);
    const host = this.workerHost(index);
    const address = host?.address ?? '127.0.0.1';
    const settings = [
      `svc.worker.host=${address}`,
      ...['rpc', 'push', 'fetch', 'replicate'].map((service, i) => `svc.worker.${service}.port=${ports[i]}`),
      `svc.worker.http.host=${address}`,
      'svc.worker.http.port=0',
      `svc.worker.graceful.shutdown.recoverPath=${path.join(own, 'recover')}`,
      ...this.tierConf(index),
      ...(this.options.racks?.[index] === undefined
        ? []
        : [`svc.worker.networkLocation=${this.options.racks[index]}`]),
      ...(this.options.workerConf ?? []),
    ];
    const confFile = options.confFile ?? this.options.workerConfFiles?.[index];
    this.workerStarts[index] = (this.workerStarts[index] ?? 0) + 1;
    const worker = new ServerProcess({
      name: `worker-${index}`,
      args: [
        'worker',
        this.masterUrlFor(options.release),
        ...this.common(options.release),
        ...(confFile === undefined ? [] : ['--conf-file', confFile]),
        ...settings.flatMap((c) => ['--conf', c]),
      ],
      logFile: path.join(this.dir, 'logs', `worker-${index}-${this.workerStarts[index]}.log`),
      ...(host === undefined ? {} : { namespace: host.namespace }),
      ...this.serverCommand(),
      testing: this.testing('worker'),
    });
    this.workers[index] = worker;
    this.started.push(worker);
    const line = await worker.waitForEvent('listening', STARTUP_WAIT_MS);
    this.workerIds[index] = String(line.node);
    this.workerHttpPorts[index] = (line.http as { port: number }).port;
    if (this.options.faultProxies === true) {
      const bound = (this.workerIds[index] ?? '').split(':').slice(1).join(',');
      if (bound !== ports.join(','))
        throw new Error(`worker-${index} bound ${bound} behind its proxies on ${ports.join(',')}`);
    }
    return worker;
  }

  /**
   * Puts a fault proxy on 127.0.0.1 in front of each data port of worker `index` and returns the ports, which the
   * worker then binds on PROXIED_BIND_HOST. The proxies take free ports first, so no other socket on 127.0.0.1 can hold
   * a port the worker chose (a CI run lost a soak to that race); `samePorts` keeps the proxies of a restarted worker.
   */
  private async proxyWorker(index: number, samePorts: boolean): Promise<number[]> {
    const current = this.proxies[index];
    if (samePorts && current !== undefined) return current.map((proxy) => proxy.port);
    for (const proxy of current ?? []) await proxy.close();
    const proxies: FaultProxy[] = [];
    this.proxies[index] = proxies;
    for (const _service of DATA_SERVICES) {
      proxies.push(
        await FaultProxy.start({
          listenHost: '127.0.0.1',
          listenPort: 0,
          targetHost: PROXIED_BIND_HOST,
          targetPort: 'same',
        }),
      );
    }
    return proxies.map((proxy) => proxy.port);
  }

  /** Resolves once every running worker has registered with the master (its `worker.registered` line). */
  async waitForRegistrations(after: ReadonlyMap<ServerProcess, number> = new Map()): Promise<void> {
    // A master that dies meanwhile would leave the workers retrying for minutes: fail at once, with its output.
    // (A value, not a rejection: once the workers have registered, the master's later exit must not surface.)
    const master = this.master;
    const masterDied = master.exited().then((code) => ({ code }));
    const registered = Promise.all(
      this.workers
        .filter((worker) => worker.running)
        .map((worker) =>
          worker.waitFor(
            (line: LogLine) => line.event === 'worker.registered',
            'its registration',
            after.get(worker) ?? 0,
            STARTUP_WAIT_MS,
          ),
        ),
    );
    registered.catch(() => undefined); // seen by the race below; never unhandled once the master's exit won it
    const first = await Promise.race([registered.then(() => undefined), masterDied]);
    if (first !== undefined) {
      throw new Error(
        `the master exited (code ${String(first.code)}) while the workers registered; last output:\n` +
          master.stderr.slice(-8).join('\n'),
      );
    }
  }

  /**
   * Kills the master and starts it again on the same port, with its state directory as it was, or emptied
   * (`forgetState`: a master whose disk was replaced, which every worker and application must register with again),
   * presenting `release` when given (a master upgraded in a rolling upgrade).
   */
  async restartMaster(
    signal: NodeJS.Signals = 'SIGKILL',
    options: { forgetState?: boolean; release?: string; whileDown?: () => Promise<void> } = {},
  ): Promise<void> {
    this.master.kill(signal);
    await this.master.exited();
    await options.whileDown?.();
    if (options.forgetState === true)
      rmSync(path.join(this.dir, 'master-state'), { recursive: true, force: true });
    await this.startMaster(this.masterPort, options.release);
  }

  /** The address of every node, with its management interface and metrics, as `--keep` prints it. */
  describe(): {
    master: string;
    masterHttp: NodeHttpAddresses;
    workers: string[];
    workersHttp: NodeHttpAddresses[];
    dir: string;
  } {
    const masterConf = [...(this.options.conf ?? []), ...(this.options.masterConf ?? [])];
    const workerConf = [...(this.options.conf ?? []), ...(this.options.workerConf ?? [])];
    return {
      master: this.masterUrl,
      masterHttp: httpAddresses(this.masterHttpUrl, masterConf),
      workers: [...this.workerIds],
      workersHttp: this.workerIds.map((_, index) => httpAddresses(this.workerHttpUrl(index), workerConf)),
      dir: this.dir,
    };
  }

  /** The etcd of the master group, `host:port`, when there is a group. */
  get etcdEndpoint(): string | undefined {
    return this.group === undefined
      ? undefined
      : (this.options.masterGroup?.etcdEndpoint ?? this.etcd?.endpoint);
  }

  /** Stops every process (SIGTERM, then SIGKILL) and removes the directory unless asked to keep it. */
  async stop(options: { keepDir?: boolean } = {}): Promise<void> {
    const current = [
      ...this.workers.filter((w) => w !== undefined),
      ...this.followers,
      ...(this.master === undefined ? [] : [this.master]),
    ];
    // A process replaced while it still ran (a frozen member restarted by a supervisor) is stopped as well.
    const all = [...new Set([...current, ...this.started.filter((server) => server.running)])];
    await Promise.all(all.map((server) => server.stop()));
    await this.etcd?.stop();
    for (const proxy of this.proxies.flat()) await proxy.close();
    if (!(options.keepDir ?? this.options.keepDir ?? false))
      rmSync(this.dir, { recursive: true, force: true });
  }
}
