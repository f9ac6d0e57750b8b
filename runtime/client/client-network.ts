import type { ResolvedConfig } from '../../conf/index.ts';
import type { StatusCode } from '../../core/domain/status.ts';
import type { Principal } from '../../core/machines/effects.ts';
import { lifecycleManagerNodeId } from '../../core/protocol/node-ids.ts';
import type { Release } from '../../core/release/version.ts';
import type { Logger } from '../log.ts';
import { nodeNetwork, type NodeNetwork } from '../process/node-network.ts';
import type { ExpectedSecret, TransportAuth } from '../transport/authentication.ts';
import { configuredSecret } from './client-config.ts';
import { SvcClientError } from './errors.ts';

export interface ClientNetwork {
  readonly network: NodeNetwork;
  /** The message of a server that refused this client's release at the handshake, once one has. */
  readonly refusal: () => string | undefined;
  /**
   * The message of a server that refused this client's proof (AUTHENTICATION_FAILED), or that requires
   * authentication this client has off, once one has.
   */
  readonly authRefusal: () => string | undefined;
  /** The last connection this process could not open (`address: reason`), if any. */
  readonly connectFailure: () => string | undefined;
}

/** Who a client process is when authentication is on: the application it acts for and its secret. */
export interface ClientIdentity {
  /** The application; absent: the one whose lifecycle manager this process was given (an executor's). */
  readonly appId?: string;
  /** The application's secret; absent: svc.client.auth.secret. */
  readonly secret?: string;
  /**
   * Whether this process serves the application's executors (a lifecycle manager): it then checks that a
   * connecting executor proves the same secret.
   */
  readonly serves?: boolean;
}

/**
 * The network of a client process (a lifecycle manager or an executor), remembering a server's refusal. With
 * svc.auth.enabled it proves its application's secret on every connection it opens (and a lifecycle manager
 * checks its executors' proofs); without a secret it does not start.
 */
export function clientNetwork(
  nodeId: string,
  release: Release,
  conf: ResolvedConfig,
  logger: Logger,
  identity: ClientIdentity = {},
): ClientNetwork {
  let refusal: string | undefined;
  let authRefusal: string | undefined;
  let connectFailure: string | undefined;
  const addresses: { network?: NodeNetwork } = {};
  // An executor's application is the one whose lifecycle manager it was handed (connectExecutor sets its address
  // before anything is sent), unless the caller names it.
  const application = (): string | undefined =>
    identity.appId ?? (addresses.network === undefined ? undefined : applicationOf(addresses.network));
  const auth = conf.getBoolean('svc.auth.enabled')
    ? clientAuth(nodeId, application, identity.secret ?? configuredSecret(conf), identity.serves === true)
    : undefined;
  const network = nodeNetwork({
    role: 'client',
    release,
    nodeId,
    conf,
    logger,
    application,
    refused: (_peer, message, status: StatusCode) => {
      if (status === 'AUTHENTICATION_FAILED') authRefusal = message;
      else refusal = message;
    },
    connectFailed: (peer, reason) => {
      connectFailure = `${peer}: ${reason}`;
    },
    ...(auth === undefined ? {} : { auth }),
  });
  addresses.network = network;
  return {
    network,
    refusal: () => refusal,
    authRefusal: () => authRefusal,
    connectFailure: () => connectFailure,
  };
}

function clientAuth(
  nodeId: string,
  application: () => string | undefined,
  secret: string | undefined,
  serves: boolean,
): TransportAuth {
  if (secret === undefined) {
    throw new SvcClientError(
      `svc.auth.enabled is on and ${nodeId} has no application secret: pass the application's secret ` +
        '(connectExecutor({ secret: application.secret })) or set svc.client.auth.secret',
    );
  }
  return {
    secret,
    get principal(): Principal {
      return { kind: 'application', appId: application() ?? '' };
    },
    expectedSecret: (hello): ExpectedSecret => {
      const appId = application();
      if (!serves || appId === undefined) {
        return { kind: 'refused', message: `${nodeId} accepts no connections` };
      }
      if (hello.role !== 'client' || hello.application !== appId) {
        return {
          kind: 'refused',
          message:
            `this is application ${appId}'s lifecycle manager; it serves that application's executors only, and ` +
            `${hello.role} ${hello.nodeId} claims ${hello.application === undefined ? 'no application' : `application ${hello.application}`}`,
        };
      }
      return { kind: 'secret', secret, principal: { kind: 'application', appId } };
    },
  };
}

/** The application whose lifecycle manager this process knows the address of (an executor knows one). */
function applicationOf(network: NodeNetwork): string | undefined {
  for (const node of network.addresses.nodes()) {
    if (node.startsWith('lm-') && lifecycleManagerNodeId(node.slice(3)) === node) return node.slice(3);
  }
  return undefined;
}
