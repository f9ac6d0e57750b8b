// The members of a local high-availability master group (docs/high-availability.md, "Running a group"): ids m1…mN
// on loopback ports picked before any of them starts (each member's address is in every member's configuration, and
// the election announces it), and the `svc.master.ha.*` settings of each.
import { stablePorts } from './stable-ports.ts';

export interface MasterGroupOptions {
  /** `host:port` of the etcd the group campaigns on; absent, the local cluster starts one of its own. */
  readonly etcdEndpoint?: string;
  /** Masters in the group (3 usually). */
  readonly members: number;
}

export interface MasterGroup {
  /** Member ids in campaign order: m1 campaigns first, on an empty etcd it leads. */
  readonly ids: readonly string[];
  /** Each member's control-plane address, `host:port`, in id order: `svc://` + these joined by commas is the group. */
  readonly addresses: readonly string[];
  /** Each member's control-plane port, by id. */
  readonly ports: ReadonlyMap<string, number>;
  /** The `key=value` settings that make a master member `id` of the group. */
  settings(id: string): string[];
}

export async function planMasterGroup(options: {
  readonly etcdEndpoint: string;
  readonly members: number;
  /**
   * Each member's address, in id order, when the members run on hosts of their own (runtime/cluster/hosts.ts);
   * default loopback. A port free on loopback is free in a host's fresh namespace too.
   */
  readonly addresses?: readonly string[];
}): Promise<MasterGroup> {
  if (!(options.members >= 1)) throw new RangeError(`a group needs a master (${options.members} asked)`);
  const ids = Array.from({ length: options.members }, (_, index) => `m${index + 1}`);
  const ports = new Map<string, number>();
  // Below the ephemeral range, so that a member restarted on its port finds it free (./stable-ports.ts).
  const drawn = await stablePorts(ids.length, '127.0.0.1');
  ids.forEach((id, index) => ports.set(id, drawn[index]!));
  const members = ids.map((id, index) => ({
    id,
    host: options.addresses?.[index] ?? '127.0.0.1',
    port: ports.get(id)!,
  }));
  return {
    ids,
    addresses: members.map((member) => `${member.host}:${member.port}`),
    ports,
    settings: (id) => memberSettings({ id, etcdEndpoint: options.etcdEndpoint, members }),
  };
}

/** A member's address in the group: where the others and the election find it. */
export interface GroupMemberAddress {
  readonly id: string;
  readonly host: string;
  readonly port: number;
}

/** The `key=value` settings that make a master member `id` of the group of `members` campaigning on `etcdEndpoint`. */
export function memberSettings(options: {
  readonly id: string;
  readonly etcdEndpoint: string;
  readonly members: readonly GroupMemberAddress[];
}): string[] {
  return [
    'svc.master.ha.enabled=true',
    `svc.master.ha.node.id=${options.id}`,
    `svc.master.ha.etcd.endpoints=${options.etcdEndpoint}`,
    ...options.members.flatMap((member) => [
      `svc.master.ha.node.${member.id}.host=${member.host}`,
      `svc.master.ha.node.${member.id}.port=${member.port}`,
      `svc.master.ha.node.${member.id}.internal.port=${member.port}`,
    ]),
  ];
}
