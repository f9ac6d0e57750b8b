// The management port of a master that does not lead (a follower of its group): the master's own management API,
// the same routes and handlers as the leader's (runtime/http/master-api.ts), over the group's state as the leader last
// persisted it in etcd (./stored-state-reader.ts) instead of a running machine. Every GET is served: the state reads
// say so in `X-Svc-Served-By: follower <id>; etcd revision <n>`, and answer 503 when etcd cannot be read; every
// request that would change state, and the metrics (only the leader has the master's), are answered 503 with the
// leader's announced address and Retry-After, so that an operator or a script is sent on. It closes when the master is
// elected, and the leader's management API takes the port.
import type { ResolvedConfig } from '../../conf/index.ts';
import { masterApi, type ManagementServer } from '../http/index.ts';
import { HttpError } from '../http/errors.ts';
import type { MasterAccess } from '../http/master-api.ts';
import type { MasterSelf } from '../http/projections/master.ts';
import { SERVED_BY_HEADER, type FollowerServing } from '../http/server.ts';
import type { Logger } from '../log.ts';
import { serveManagement } from './server-parts.ts';
import { StoredStateUnavailable, type StoredStateReader } from './stored-state-reader.ts';

export interface FollowerHttpOptions {
  /** The configuration the process runs on: the management port, its TLS and authentication. */
  readonly conf: ResolvedConfig;
  /** What the master presents (its release, its configuration as /api/v1/conf shows it). */
  readonly presented: ResolvedConfig;
  readonly memberId: string;
  /** The leader as the election last named it (`<id>@<host>:<port>`), or null when unknown. */
  readonly leader: () => string | null;
  /** The node id, data port and group as GET /api/v1/masters shows them. */
  readonly self: MasterSelf;
  readonly reader: StoredStateReader;
  /** svc.metrics.prometheus.path and svc.metrics.json.path when metrics are on: refused, as writes are. */
  readonly metricsPaths: readonly string[];
  readonly logger: Logger;
}

/** Why a follower does not do what it was asked, and whom to ask instead. */
function notLeaderMessage(memberId: string, leader: string | null, what: string): string {
  return (
    `master ${memberId} does not lead its group and ${what}; ` +
    (leader === null ? 'no leader is known yet' : `the leader is ${leader}`)
  );
}

/** The routes' access on a follower: reads from etcd, commands refused. */
export function followerAccess(options: {
  readonly memberId: string;
  readonly leader: () => string | null;
  readonly reader: StoredStateReader;
  readonly refusedReads?: readonly string[];
}): MasterAccess {
  const { memberId, leader, reader } = options;
  const follower: FollowerServing = {
    servedBy: `follower ${memberId}`,
    notLeader: () => {
      const named = leader();
      return {
        message: notLeaderMessage(memberId, named, 'takes no commands (nor serves the metrics)'),
        leader: named,
      };
    },
    ...(options.refusedReads === undefined ? {} : { refusedReads: options.refusedReads }),
  };
  return {
    follower,
    read: async () => {
      try {
        const { state, revision } = await reader.read();
        return {
          state,
          now: undefined,
          headers: { [SERVED_BY_HEADER]: `follower ${memberId}; etcd revision ${revision}` },
        };
      } catch (error) {
        if (!(error instanceof StoredStateUnavailable)) throw error;
        throw new HttpError(
          503,
          `master ${memberId} follows its group and serves reads from the state in etcd, but ${error.message}; ` +
            `ask the leader (${leader() ?? 'none known yet'}) or again later`,
          { 'retry-after': '1' },
        );
      }
    },
    // Commands are refused before any handler runs (runtime/http/server.ts); this is the same answer, should one
    // reach a handler.
    admin: () => {
      const { message } = follower.notLeader();
      return Promise.reject(new HttpError(503, message, { 'retry-after': '1' }));
    },
  };
}

/** Serves the follower's management API on svc.master.http.host:port, as the leader's would be served. */
export async function serveFollowerHttp(options: FollowerHttpOptions): Promise<ManagementServer> {
  const { logger, memberId } = options;
  const server = await serveManagement({
    role: 'master',
    api: masterApi({
      access: followerAccess({
        memberId,
        leader: options.leader,
        reader: options.reader,
        refusedReads: options.metricsPaths,
      }),
      conf: options.presented,
      self: options.self,
    }),
    conf: options.conf,
    logger,
  });
  logger.info(
    { event: 'ha.notLeaderHttp', member: memberId, http: server.address },
    `master ${memberId} follows: its management port ${server.address.port} serves reads from the state in etcd ` +
      'and answers writes 503 with the leader until it leads',
  );
  return {
    ...server,
    // Elected: the leader's management API waits for this port, and the master machine for it. A read in flight is
    // cut rather than given the usual grace (its client asks again, and the leader answers).
    close: () => {
      server.app.server.closeAllConnections();
      return server.close();
    },
  };
}
