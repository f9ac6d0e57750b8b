import type { ResolvedConfig } from '../../conf/index.ts';
import type { Release } from '../../core/release/version.ts';
import type { Logger } from '../log.ts';
import { nodeNetwork, type NodeNetwork } from '../process/node-network.ts';

export interface ClientNetwork {
  readonly network: NodeNetwork;
  /** The message of a server that refused this client's release at the handshake, once one has. */
  readonly refusal: () => string | undefined;
}

/** The network of a client process (a lifecycle manager or an executor), remembering a server's refusal. */
export function clientNetwork(
  nodeId: string,
  release: Release,
  conf: ResolvedConfig,
  logger: Logger,
): ClientNetwork {
  let refusal: string | undefined;
  const network = nodeNetwork({
    role: 'client',
    release,
    nodeId,
    conf,
    logger,
    refused: (_peer, message) => {
      refusal = message;
    },
  });
  return { network, refusal: () => refusal };
}
