import type { StatusCode } from '../../core/domain/status.ts';
import type { Address } from '../transport/addresses.ts';
import { nodeNetwork, type NodeNetwork } from '../transport/node-network.ts';
import type { ExpectedSecret, TransportAuth } from '../transport/authentication.ts';
import type { ReceiveBodies } from '../wire/index.ts';
import { serverAdmission } from '../transport/release-admission.ts';
import type { ClientSettings } from './client-config.ts';
import { SvcArgumentError, SvcClientError } from './errors.ts';

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
  /** The application this process acts for. */
  readonly appId: string;
  /** The application's secret; absent: the client's (ClientSettings `secret`). */
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
export function clientNetwork(options: {
  /** The process's name in handshakes: the lifecycle manager's node id, or the executor's name. */
  readonly nodeId: string;
  readonly client: ClientSettings;
  readonly identity: ClientIdentity;
  /** The masters a lifecycle manager talks to: one, or every member of a group, whose leader it follows. */
  readonly masters?: readonly Address[];
  /** Where large frames are read into, lent again once consumed (an executor's chunks: ./partition-reader.ts). */
  readonly receiveBodies?: ReceiveBodies;
}): ClientNetwork {
  const { nodeId, client, identity } = options;
  const { release, conf, logger } = client;
  let refusal: string | undefined;
  let authRefusal: string | undefined;
  let connectFailure: string | undefined;
  const application = identity.appId;
  const auth = client.authEnabled
    ? clientAuth(nodeId, application, identity.secret ?? client.secret, identity.serves === true)
    : undefined;
  const network = nodeNetwork({
    role: 'client',
    release,
    nodeId,
    conf,
    logger,
    application,
    // A lifecycle manager admits its executors by release as a master or worker admits clients.
    ...(identity.serves === true ? { admit: serverAdmission(release) } : {}),
    refused: (_peer, message, status: StatusCode) => {
      if (status === 'AUTHENTICATION_FAILED') authRefusal = message;
      else refusal = message;
    },
    connectFailed: (peer, reason) => {
      connectFailure = `${peer}: ${reason}`;
    },
    ...(auth === undefined ? {} : { auth }),
    configError: (message) => new SvcClientError(message),
    ...(options.masters === undefined ? {} : { masters: options.masters }),
    ...(options.receiveBodies === undefined ? {} : { receiveBodies: options.receiveBodies }),
  });
  return {
    network,
    refusal: () => refusal,
    authRefusal: () => authRefusal,
    connectFailure: () => connectFailure,
  };
}

function clientAuth(
  nodeId: string,
  appId: string,
  secret: string | undefined,
  serves: boolean,
): TransportAuth {
  if (secret === undefined) {
    throw new SvcArgumentError(
      `svc.auth.enabled is on and ${nodeId} has no application secret: pass the application's secret ` +
        '(connectExecutor({ secret: application.secret })) or set svc.client.auth.secret',
    );
  }
  return {
    secret,
    principal: { kind: 'application', appId },
    expectedSecret: (hello): ExpectedSecret => {
      if (!serves) {
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
