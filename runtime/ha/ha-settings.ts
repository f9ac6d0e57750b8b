// A master's high-availability settings from its configuration: whether it runs in a group, its id, the members,
// how to reach etcd, and the leadership machine's timing (docs/high-availability.md, "Configuration"). The contract's
// raft.client.rpc.* timeouts become the etcd client's: every call's deadline, and the time etcd has to confirm a watch.
import { DEFAULT_HA_TIMING, timingProblems, type HaTiming } from '../../core/ha/timing.ts';
import { ConfigError } from '../../conf/problems.ts';
import type { ResolvedConfig } from '../../conf/resolve.ts';
import type { EtcdClientOptions } from './etcd-client.ts';

export interface HaMember {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly internalPort: number;
}

export interface HaSettings {
  readonly enabled: boolean;
  /** This master's id in the group (svc.master.ha.node.id); undefined when the group is off. */
  readonly nodeId: string | undefined;
  readonly members: readonly HaMember[];
  /** Where the group's keys live in etcd (svc.master.ha.etcd.keyPrefix), ending in `/`. */
  readonly keyPrefix: string;
  readonly etcd: EtcdClientOptions & { readonly watchTimeoutMs: number };
  /** The leadership machine's timing: the lease, its renewals and the campaign's retry from the keys. */
  readonly timing: HaTiming;
}

/** The keys of each configurable part of the timing, for the error that names them. */
const TIMING_KEYS = {
  leaseTtlMs: 'svc.master.ha.lease.timeout',
  keepAliveIntervalMs: 'svc.master.ha.lease.renew.interval',
  campaignRetryMs: 'svc.master.ha.campaign.retry.interval',
} as const;

/**
 * The timing from the keys; the clock bound and the step-down margin stay the core's (core/ha/timing.ts), the
 * margin scaled with the lease so that a shorter lease keeps the same proportions. Throws ConfigError with the
 * core's reason when a leader could not keep its lead.
 */
export function haTimingFrom(conf: ResolvedConfig): HaTiming {
  const leaseTtlMs = conf.getDurationMs(TIMING_KEYS.leaseTtlMs);
  const timing: HaTiming = {
    leaseTtlMs,
    keepAliveIntervalMs: conf.getDurationMs(TIMING_KEYS.keepAliveIntervalMs),
    campaignRetryMs: conf.getDurationMs(TIMING_KEYS.campaignRetryMs),
    clockDrift: DEFAULT_HA_TIMING.clockDrift,
    stepDownMarginMs: Math.min(
      DEFAULT_HA_TIMING.stepDownMarginMs,
      (DEFAULT_HA_TIMING.stepDownMarginMs * leaseTtlMs) / DEFAULT_HA_TIMING.leaseTtlMs,
    ),
  };
  const problems = timingProblems(timing);
  if (problems.length > 0) {
    throw new ConfigError(
      `the high-availability timing cannot keep a leader: ${problems.join('; ')} ` +
        `(${TIMING_KEYS.leaseTtlMs}, ${TIMING_KEYS.keepAliveIntervalMs}, ${TIMING_KEYS.campaignRetryMs})`,
      TIMING_KEYS.leaseTtlMs,
    );
  }
  return timing;
}

function optional(conf: ResolvedConfig, key: string): string | undefined {
  if (!conf.has(key)) return undefined;
  const value = conf.get(key);
  return value === undefined || value === '' ? undefined : String(value);
}

/** The group's members as `svc.master.ha.node.<id>.*` name them, sorted by id. */
export function haMembersFrom(conf: ResolvedConfig): HaMember[] {
  return conf.instancesOf('svc.master.ha.node.<id>.host').map((id) => ({
    id,
    host: conf.getString(`svc.master.ha.node.${id}.host`),
    port: conf.getInt(`svc.master.ha.node.${id}.port`),
    internalPort: conf.getInt(`svc.master.ha.node.${id}.internal.port`),
  }));
}

/** Reads the settings; throws ConfigError naming the key to set when a group is asked for and cannot run. */
export function haSettingsFrom(conf: ResolvedConfig): HaSettings {
  const enabled = conf.has('svc.master.ha.enabled') && conf.getBoolean('svc.master.ha.enabled');
  const members = haMembersFrom(conf);
  const nodeId = optional(conf, 'svc.master.ha.node.id');
  const endpoints = conf.has('svc.master.ha.etcd.endpoints')
    ? (conf.get('svc.master.ha.etcd.endpoints') as readonly string[] | undefined)
    : undefined;
  const prefix = conf.getString('svc.master.ha.etcd.keyPrefix');
  const caFile = optional(conf, 'svc.master.ha.etcd.ssl.caFile');
  const certFile = optional(conf, 'svc.master.ha.etcd.ssl.certFile');
  const keyFile = optional(conf, 'svc.master.ha.etcd.ssl.keyFile');
  const user = optional(conf, 'svc.master.ha.etcd.user');
  const password = optional(conf, 'svc.master.ha.etcd.password');
  if (enabled) {
    if (endpoints === undefined || endpoints.length === 0) {
      throw new ConfigError(
        'svc.master.ha.enabled is true but svc.master.ha.etcd.endpoints names no etcd member: set it to host:port,…',
        'svc.master.ha.etcd.endpoints',
      );
    }
    if (nodeId === undefined || !members.some((member) => member.id === nodeId)) {
      throw new ConfigError(
        `svc.master.ha.node.id must name one of the members svc.master.ha.node.<id>.host sets ` +
          `(${members.map((member) => member.id).join(', ') || 'none set'})`,
        'svc.master.ha.node.id',
      );
    }
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(
      'svc.master.ha.etcd.ssl.certFile and svc.master.ha.etcd.ssl.keyFile go together: set both or neither',
      'svc.master.ha.etcd.ssl.certFile',
    );
  }
  if ((user === undefined) !== (password === undefined)) {
    throw new ConfigError(
      'svc.master.ha.etcd.user and svc.master.ha.etcd.password go together: set both or neither',
      'svc.master.ha.etcd.user',
    );
  }
  const tls =
    caFile === undefined && certFile === undefined
      ? undefined
      : {
          ...(caFile === undefined ? {} : { caFile }),
          ...(certFile === undefined ? {} : { certFile }),
          ...(keyFile === undefined ? {} : { keyFile }),
        };
  return {
    enabled,
    timing: enabled ? haTimingFrom(conf) : DEFAULT_HA_TIMING,
    nodeId: enabled ? nodeId : undefined,
    members,
    keyPrefix: prefix.endsWith('/') ? prefix : `${prefix}/`,
    etcd: {
      endpoints: endpoints ?? [],
      requestTimeoutMs: conf.getDurationMs('raft.client.rpc.request.timeout'),
      watchTimeoutMs: conf.getDurationMs('raft.client.rpc.watch.request.timeout'),
      ...(tls === undefined ? {} : { tls }),
      ...(user === undefined || password === undefined ? {} : { user: { name: user, password } }),
    },
  };
}
