import type { ResolvedConfig } from '../../conf/index.ts';
import type { Release } from '../../core/release/version.ts';
import { NodeHost } from '../driver/node-host.ts';
import type { Logger } from '../log.ts';
import { AddressBook } from '../transport/addresses.ts';
import { Transport, type Admission } from '../transport/transport.ts';
import type { Hello, PeerRole } from '../wire/index.ts';

export interface NodeNetwork {
  readonly transport: Transport;
  readonly host: NodeHost;
  readonly addresses: AddressBook;
}

export interface NodeNetworkOptions {
  readonly role: PeerRole;
  readonly release: Release;
  /** The process's name in handshakes: a server's node id, a client's application or executor name. */
  readonly nodeId: string;
  readonly conf: ResolvedConfig;
  readonly logger: Logger;
  readonly admit?: (hello: Hello) => Admission;
  readonly refused?: (peer: string, message: string) => void;
}

/** The transport, address book and node registry of one process, with the limits its configuration sets. */
export function nodeNetwork(options: NodeNetworkOptions): NodeNetwork {
  const host = new NodeHost();
  const addresses = new AddressBook();
  const conf = options.conf;
  const transport = new Transport({
    self: { role: options.role, release: options.release, nodeId: options.nodeId },
    maxFrameBytes: conf.getBytes('svc.network.frame.maxSize'),
    connectTimeoutMs: conf.getDurationMs('svc.network.connect.timeout'),
    frameTimeoutMs: conf.getDurationMs('svc.network.timeout'),
    addresses,
    logger: options.logger,
    admit: options.admit ?? (() => ({ accepted: true })),
    isLocal: (node) => host.has(node),
    deliver: (envelope) => host.deliver(envelope),
    sendFailed: (envelope) => host.sendFailed(envelope),
    ...(options.refused === undefined ? {} : { refused: options.refused }),
  });
  return { transport, host, addresses };
}
