// A master of a high-availability group (svc.master.ha.enabled): it campaigns on etcd through the core's leadership
// machine (runtime/ha/ha-driver.ts) and runs the master machine only once elected, from the state the machine loaded
// (the restart path), its persists written to etcd as fenced keys. Deposed, it exits with NOT_LEADER_EXIT_CODE after
// one log line: a supervisor restarts it as a follower (docs/high-availability.md, "Running a group").
import type { MasterDurableState } from '../../core/machines/master/state.ts';
import { EtcdClient } from '../ha/etcd-client.ts';
import { EtcdRequests } from '../ha/etcd-requests.ts';
import { EtcdStore, textOf } from '../ha/etcd-store.ts';
import { HaDriver } from '../ha/ha-driver.ts';
import type { HaSettings } from '../ha/ha-settings.ts';
import type { MasterGroupView } from '../http/projections/master.ts';
import type { Logger } from '../log.ts';
import type { DurableStore } from '../storage/durable-store.ts';
import type { StoredRange } from './stored-state-reader.ts';

/** The exit code of a master that stopped acting as leader (EX_TEMPFAIL): restart it, it follows. */
export const NOT_LEADER_EXIT_CODE = 75;

export interface MasterLeadership {
  /** Resolves with the recovered state (the master machine's `start` input) once this master leads. */
  readonly elected: Promise<ReadonlyMap<string, string>>;
  /** The master's durable store while it leads: each write a fenced persist through the leadership machine. */
  readonly store: DurableStore;
  readonly driver: HaDriver;
  /** The group as this member knows it now (GET /api/v1/masters on every member). */
  group(): MasterGroupView;
  /** Whether this member leads now (it was elected and has not stopped acting). */
  readonly leading: () => boolean;
  /** The key prefix of the group's stored state. */
  readonly statePrefix: string;
  /** Every key of the group's stored state, read at one revision (a follower's management API reads). */
  readStoredState(): Promise<StoredRange>;
  /** A planned stop: resigns (the next master leads at once), then closes the etcd client. */
  close(): Promise<void>;
}

export interface MasterLeadershipOptions {
  readonly settings: HaSettings;
  readonly emptyState: MasterDurableState;
  readonly logger: Logger;
  /** The master must stop now: it no longer leads (`deposed`) or the stored state is unusable. */
  readonly stop: (code: number, reason: string) => void;
}

export function campaignForMaster(options: MasterLeadershipOptions): MasterLeadership {
  const { settings, logger } = options;
  const nodeId = settings.nodeId!;
  const member = settings.members.find((m) => m.id === nodeId)!;
  const client = new EtcdClient(settings.etcd);
  let elected!: (recovered: ReadonlyMap<string, string>) => void;
  let refused!: (error: Error) => void;
  const electedPromise = new Promise<ReadonlyMap<string, string>>((resolve, reject) => {
    elected = resolve;
    refused = reject;
  });
  let leading = false;
  let leaderValue: string | null = null;
  let revision = 0;
  const statePrefix = `${settings.keyPrefix}master/state/`;
  const driver = new HaDriver(
    {
      memberId: nodeId,
      announce: `${nodeId}@${member.host}:${member.port}`,
      election: `${settings.keyPrefix}master/election/`,
      statePrefix,
      timing: settings.timing,
      emptyState: options.emptyState,
    },
    new EtcdRequests(client, {
      requestTimeoutMs: settings.etcd.requestTimeoutMs,
      watchTimeoutMs: settings.etcd.watchTimeoutMs,
    }),
    logger,
    {
      startActing: (recovered, fence) => {
        revision = Math.max(revision, fence.createRevision);
        if (leading) {
          // A reload under the same term (a write's outcome unknown): the running machine's state may be stale.
          options.stop(NOT_LEADER_EXIT_CODE, 'leadership reloaded the state: restarting to act on it');
          return;
        }
        leading = true;
        elected(recovered);
      },
      stopActing: (reason) => {
        if (!leading) return;
        logger.warn(
          { event: 'ha.exit', member: nodeId, code: NOT_LEADER_EXIT_CODE, reason },
          `master ${nodeId} no longer leads (${reason}): exiting with code ${NOT_LEADER_EXIT_CODE} to restart as a follower`,
        );
        options.stop(NOT_LEADER_EXIT_CODE, `no longer the leader: ${reason}`);
      },
      fatal: (reason) => {
        refused(new Error(reason));
        options.stop(1, reason);
      },
      leaderIs: (value, at) => {
        leaderValue = value;
        revision = Math.max(revision, at);
        if (!leading && value !== null)
          logger.info({ event: 'ha.following', member: nodeId, leader: value }, `following ${value}`);
      },
    },
  );
  driver.start();
  const store: DurableStore = {
    load: () => electedPromise.then((recovered) => new Map(recovered)),
    // One write of the node driver (the persists of one step or a group of steps) is one fenced persist.
    write: (changes) => driver.persist(changes),
    close: async () => {
      await driver.resign();
      driver.close();
      client.close();
    },
  };
  const group = (): MasterGroupView => {
    const leaderId = leading ? nodeId : leaderIdOf(leaderValue);
    const leaderMember = settings.members.find((m) => m.id === leaderId);
    return {
      groupId: settings.keyPrefix,
      leader:
        leaderMember === undefined
          ? null
          : { id: leaderMember.id, address: `${leaderMember.host}:${leaderMember.port}` },
      revision,
      members: settings.members.map((m) => ({
        id: m.id,
        address: `${m.host}:${m.port}`,
        internalAddress: `${m.host}:${m.internalPort}`,
        role: m.id === leaderId ? 'LEADER' : m.id === nodeId ? 'FOLLOWER' : 'UNKNOWN',
      })),
    };
  };
  return {
    elected: electedPromise,
    store,
    driver,
    group,
    leading: () => leading,
    statePrefix,
    readStoredState: async () => {
      const page = await new EtcdStore(client).list(statePrefix);
      return {
        values: page.values.map((value) => ({ key: value.key, value: textOf(value) })),
        revision: page.revision,
      };
    },
    close: () => store.close(),
  };
}

/** The member id of an election value (`<id>@<host>:<port>`). */
function leaderIdOf(value: string | null): string | null {
  if (value === null) return null;
  const at = value.lastIndexOf('@');
  return at < 0 ? null : value.slice(0, at);
}
