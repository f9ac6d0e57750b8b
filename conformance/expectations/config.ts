// Contract section 9.2 as data: the keys servers read that were renamed or deprecated (a server started with the old
// name starts and reports the new one), the keys removed (a server started with one refuses to start), and the
// defaults that changed (each release shows its own). Client-only keys are not visible from servers; they are listed
// with `client: true` so that their rows say so instead of vanishing.
import type { Role } from './endpoints.ts';
import { compareReleases } from './releases.ts';

export interface DeprecatedKey {
  readonly release: string;
  readonly role: Role;
  readonly before: string;
  readonly after: string;
  /** A value the suite starts the server with (harmless for the test). */
  readonly value: string;
  /**
   * Where the old name's effect can be seen from outside, the behaviour the row judges instead of the configuration
   * shown: a server of the suite's own started with the old name set to `value` must refuse a user over quota
   * (`quota`) or answer pushes congested (`congestion`), naming or acting on the new key.
   */
  readonly behaviour?: { readonly kind: 'quota' | 'congestion'; readonly value: string };
}

export const DEPRECATED_SERVER_KEYS: readonly DeprecatedKey[] = [
  {
    release: '0.6.0',
    role: 'master',
    before: 'svc.quota.tenant.diskBytesWritten',
    after: 'svc.quota.user.diskBytesWritten',
    value: '1t',
    behaviour: { kind: 'quota', value: '1' },
  },
  {
    release: '0.6.0',
    role: 'master',
    before: 'svc.quota.tenant.diskFileCount',
    after: 'svc.quota.user.diskFileCount',
    value: '100000',
    behaviour: { kind: 'quota', value: '1' },
  },
  {
    release: '0.6.0',
    role: 'master',
    before: 'svc.quota.tenant.hdfsBytesWritten',
    after: 'svc.quota.user.hdfsBytesWritten',
    value: '1t',
  },
  {
    release: '0.6.0',
    role: 'master',
    before: 'svc.quota.tenant.hdfsFileCount',
    after: 'svc.quota.user.hdfsFileCount',
    value: '100000',
  },
  {
    release: '0.6.0',
    role: 'master',
    before: 'svc.master.hdfs.expireDirs.timeout',
    after: 'svc.master.dfs.expireDirs.timeout',
    value: '2h',
  },
  {
    release: '0.6.0',
    role: 'worker',
    before: 'svc.worker.congestionControl.low.watermark',
    after: 'svc.worker.congestionControl.diskBuffer.low.watermark',
    value: '100m',
  },
  {
    release: '0.6.0',
    role: 'worker',
    before: 'svc.worker.congestionControl.high.watermark',
    after: 'svc.worker.congestionControl.diskBuffer.high.watermark',
    value: '200m',
    // One byte: data waiting for the disks (a flush buffer not yet full) passes it at the first check.
    behaviour: { kind: 'congestion', value: '1' },
  },
  {
    release: '0.4.0',
    role: 'master',
    before: 'svc.storage.activeTypes',
    after: 'svc.storage.availableTypes',
    value: 'HDD',
  },
  {
    release: '0.3.0',
    role: 'master',
    before: 'svc.ha.master.enabled',
    after: 'svc.master.ha.enabled',
    value: 'false',
  },
];

export interface RemovedKey {
  readonly release: string;
  readonly role: Role;
  readonly key: string;
  readonly value: string;
}

/** Removed keys a server may be given; `rss.*` stands for the 0.3.0 row ("rss.* keys: support removed"). */
export const REMOVED_SERVER_KEYS: readonly RemovedKey[] = [
  {
    release: '0.4.0',
    role: 'worker',
    key: 'svc.worker.userResourceConsumption.update.interval',
    value: '30s',
  },
  { release: '0.3.0', role: 'master', key: 'rss.master.port', value: '9097' },
];

/**
 * The message a refusal must carry. The contract does not word it; the documented form (docs/configuration.md) is
 * the key, then that it was removed (or, for `rss.*`, is no longer read), and the suite requires both.
 */
export const REMOVED_KEY_MESSAGE = (key: string): RegExp =>
  new RegExp(`${key.replace(/[.*]/g, (c) => `\\${c}`)}.*(removed|no longer read|not read since)`, 'i');

export interface DefaultChange {
  /** The release the contract dates the change to. */
  readonly release: string;
  /** Another release the contract says the guide attributes the change to: either value is accepted there. */
  readonly alsoAttributedTo?: string;
  readonly role: Role | 'client';
  readonly key: string;
  /** Values as the contract writes them, in the unit the suite reads them (see `sameValue`). */
  readonly before: string | undefined;
  readonly after: readonly string[];
}

/** The control plane's connections per peer; rule 8 observes them on the master (checks/connections.ts). */
export const CONNECTIONS_KEY = 'svc.rpc.io.numConnectionsPerPeer';

/** The connections a process of `release` keeps to each peer by default: the contract's 0.4.0 change. */
export function connectionsPerPeerAt(release: string): number {
  const change = DEFAULT_CHANGES.find((c) => c.key === CONNECTIONS_KEY)!;
  return Number(compareReleases(release, change.release) >= 0 ? change.after[0] : change.before);
}

export const DEFAULT_CHANGES: readonly DefaultChange[] = [
  { release: '0.6.0', role: 'master', key: 'svc.master.slot.assign.extraSlots', before: '2', after: ['100'] },
  {
    release: '0.6.0',
    role: 'master',
    key: 'svc.master.slot.assign.minWorkers',
    before: undefined,
    after: ['100'],
  },
  // "Made optional. Default changed from NIO to EPOLL when epoll is available, otherwise NIO."
  { release: '0.6.0', role: 'master', key: 'svc.rpc.io.mode', before: 'NIO', after: ['EPOLL', 'NIO', ''] },
  {
    release: '0.6.0',
    role: 'client',
    key: 'svc.client.spark.stageRerun.enabled',
    before: 'false',
    after: ['true'],
  },
  {
    release: '0.5.0',
    role: 'worker',
    key: 'svc.worker.graceful.shutdown.recoverDbBackend',
    before: 'LEVELDB',
    after: ['ROCKSDB'],
  },
  { release: '0.4.0', role: 'master', key: CONNECTIONS_KEY, before: '2', after: ['1'] },
  { release: '0.4.0', role: 'worker', key: 'svc.push.io.numConnectionsPerPeer', before: '2', after: ['1'] },
  {
    release: '0.3.2',
    alsoAttributedTo: '0.3.1',
    role: 'master',
    key: 'raft.client.rpc.request.timeout',
    before: '3s',
    after: ['10s'],
  },
  {
    release: '0.3.2',
    alsoAttributedTo: '0.3.1',
    role: 'master',
    key: 'raft.client.rpc.watch.request.timeout',
    before: '10s',
    after: ['20s'],
  },
  {
    release: '0.3.1',
    role: 'worker',
    key: 'svc.worker.directMemoryRatioToResume',
    before: '0.5',
    after: ['0.7'],
  },
  // The contract writes "60 to 30" without a unit; the key is an interval, read here in seconds.
  {
    release: '0.3.1',
    role: 'worker',
    key: 'svc.worker.monitor.disk.check.interval',
    before: '60s',
    after: ['30s'],
  },
  {
    release: '0.3.0',
    role: 'client',
    key: 'svc.client.push.replicate.enabled',
    before: 'true',
    after: ['false'],
  },
  {
    release: '0.3.0',
    role: 'worker',
    key: 'svc.worker.storage.workingDir',
    before: 'hadoop/rss-worker/shuffle_data',
    after: ['svc-worker/shuffle_data'],
  },
];

const DURATION_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  min: 60_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** A value as a comparable string: durations in ms, numbers without trailing zeros, words in upper case. */
export function canonicalValue(value: string): string {
  const text = value.trim();
  const duration = /^(\d+(?:\.\d+)?)(ms|s|min|m|h|d)$/i.exec(text);
  if (duration !== null) return `${Number(duration[1]) * (DURATION_MS[duration[2]!.toLowerCase()] ?? 1)}ms`;
  if (/^-?\d+(?:\.\d+)?$/.test(text)) return String(Number(text));
  return text.toUpperCase();
}

export function sameValue(a: string, b: string): boolean {
  return canonicalValue(a) === canonicalValue(b);
}
