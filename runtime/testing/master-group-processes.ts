// The real processes of a master group's tests: member masters (their `svc.master.ha.*` settings from
// cluster/master-group.ts) and workers given the whole group, each in a directory of its own under the test's, every
// one remembered so that the test's after() stops them all, restarts included. For tests that start, kill and
// restart members one by one, which LocalCluster's `masterGroup` (all members at once, stopped together) does not do.
import path from 'node:path';
import { memberSettings, planMasterGroup, type GroupMemberAddress } from '../cluster/master-group.ts';
import { ServerProcess } from '../cluster/server-process.ts';

/** Where a process runs: an address to bind, and on namespace hosts (cluster/hosts.ts) the host's namespace. */
export interface ProcessHost {
  readonly address: string;
  readonly namespace?: string;
}

/** A member of the group: its control-plane address, and the namespace it runs in, if any. */
export interface GroupMember extends GroupMemberAddress {
  readonly namespace?: string;
}

const LOOPBACK: ProcessHost = { address: '127.0.0.1' };

/** The settings of a worker with ports from 0 and its disk and recovery file under `own`. */
export function workerConf(own: string, host: ProcessHost = LOOPBACK): string[] {
  return [
    `svc.worker.host=${host.address}`,
    ...['rpc', 'push', 'fetch', 'replicate'].map((service) => `svc.worker.${service}.port=0`),
    `svc.worker.http.host=${host.address}`,
    'svc.worker.http.port=0',
    `svc.worker.storage.dirs=${path.join(own, 'disk-1')}`,
    `svc.worker.graceful.shutdown.recoverPath=${path.join(own, 'recover')}`,
  ];
}

/** A master on loopback with every port from 0, for the group tests' masters started without MasterGroupProcesses. */
export const LOOPBACK_MASTER_CONF: readonly string[] = [
  'svc.master.host=127.0.0.1',
  'svc.master.port=0',
  'svc.master.http.host=127.0.0.1',
  'svc.master.http.port=0',
];

/** `--conf` arguments for each of `conf`. */
export const confArgs = (conf: readonly string[]): string[] => conf.flatMap((c) => ['--conf', c]);

export class MasterGroupProcesses {
  /** `svc://h1:p1,h2:p2,…`: the whole group, as workers and applications are given it. */
  readonly url: string;
  /** The running process of each member, by id (the latest start of it). */
  readonly members = new Map<string, ServerProcess>();
  /** Every master started, restarts included. */
  readonly masters: ServerProcess[] = [];
  readonly workers: ServerProcess[] = [];

  constructor(
    private readonly options: {
      readonly etcdEndpoint: string;
      /** The test's directory: state dirs, worker disks and logs go under it. */
      readonly dir: string;
      /** The members, in campaign order. */
      readonly members: readonly GroupMember[];
    },
  ) {
    this.url = `svc://${options.members.map((member) => `${member.host}:${member.port}`).join(',')}`;
  }

  /** A group of `members` masters m1…mN on loopback, on ports planned as LocalCluster's `masterGroup` plans them. */
  static async onLoopback(options: {
    readonly etcdEndpoint: string;
    readonly dir: string;
    readonly members: number;
  }): Promise<MasterGroupProcesses> {
    const plan = await planMasterGroup(options);
    const members = plan.ids.map((id) => ({ id, host: '127.0.0.1', port: plan.ports.get(id)! }));
    return new MasterGroupProcesses({ etcdEndpoint: options.etcdEndpoint, dir: options.dir, members });
  }

  /** Member `id`'s control-plane address, `host:port`, as the election announces it. */
  addressOf(id: string): string {
    const member = this.member(id);
    return `${member.host}:${member.port}`;
  }

  /** The settings that make a master member `id` of the group. */
  settings(id: string): string[] {
    return memberSettings({ id, etcdEndpoint: this.options.etcdEndpoint, members: this.options.members });
  }

  /** Member `id` at its host, its state in a directory of its own that outlives a restart. */
  startMaster(id: string): ServerProcess {
    const member = this.member(id);
    const run = this.masters.filter((master) => master.options.name === `master-${id}`).length + 1;
    const conf = [
      `svc.master.host=${member.host}`,
      `svc.master.http.host=${member.host}`,
      'svc.master.http.port=0',
      `svc.master.state.dir=${path.join(this.options.dir, `state-${id}`)}`,
      ...this.settings(id),
    ];
    const master = new ServerProcess({
      name: `master-${id}`,
      logFile: path.join(this.options.dir, `master-${id}-${run}.log`),
      args: ['master', '--log-level', 'info', ...confArgs(conf)],
      ...(member.namespace !== undefined ? { namespace: member.namespace } : {}),
    });
    this.members.set(id, master);
    this.masters.push(master);
    return master;
  }

  /** Worker `index`, given the whole group, on `host`. */
  startWorker(index: number, host: ProcessHost = LOOPBACK): ServerProcess {
    const conf = workerConf(path.join(this.options.dir, `worker-${index}`), host);
    const worker = new ServerProcess({
      name: `worker-${index}`,
      logFile: path.join(this.options.dir, `worker-${index}.log`),
      args: ['worker', this.url, '--log-level', 'info', ...confArgs(conf)],
      ...(host.namespace !== undefined ? { namespace: host.namespace } : {}),
    });
    this.workers.push(worker);
    return worker;
  }

  private member(id: string): GroupMember {
    const member = this.options.members.find((candidate) => candidate.id === id);
    if (member === undefined) throw new RangeError(`${id} is not a member of the group`);
    return member;
  }

  /** Stops every process started, the workers first. */
  async stopAll(): Promise<void> {
    for (const worker of this.workers) await worker.stop();
    for (const master of this.masters) await master.stop();
  }
}
