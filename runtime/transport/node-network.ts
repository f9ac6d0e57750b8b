import type { SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import { readFileSync } from 'node:fs';
import type { ResolvedConfig } from '../../conf/index.ts';
import type { StatusCode } from '../../core/domain/status.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Release } from '../../core/release/version.ts';
import { NodeHost } from '../driver/node-host.ts';
import type { Logger } from '../log.ts';
import { AddressBook, type Address } from './addresses.ts';
import { MasterFollower } from './master-follower.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import type { Envelope } from '../../core/machines/effects.ts';
import type { TransportAuth } from './authentication.ts';
import type { ReceiveMemory } from './receive-memory.ts';
import { TransportConfigError, type TransportTls } from './tls.ts';
import type { HelloAdmission } from '../../core/handshake/index.ts';
import { Transport } from './transport.ts';
import type { Hello, PeerRole, ReceiveBodies, WireEnvelope } from '../wire/index.ts';

export interface NodeNetwork {
  readonly transport: Transport;
  readonly host: NodeHost;
  readonly addresses: AddressBook;
  /**
   * Sends an envelope: through the master follower when the process talks to a group of masters (`masters`),
   * which resolves the master's node id to the member the core names and follows its NotLeader answers.
   */
  readonly send: (envelope: WireEnvelope) => void;
  /** The master follower of a process given `masters`. */
  readonly masters?: MasterFollower;
}

export interface NodeNetworkOptions {
  readonly role: PeerRole;
  readonly release: Release;
  /** The process's name in handshakes: a server's node id, a client's application or executor name. */
  readonly nodeId: string;
  readonly conf: ResolvedConfig;
  /**
   * Where svc.<module>.io.numConnectionsPerPeer is read: a server's presented release's configuration, whose defaults
   * it behaves by (2 before 0.4.0). Absent: `conf`.
   */
  readonly presented?: ResolvedConfig;
  readonly logger: Logger;
  /** The application a client process acts for, named in its hellos; absent for servers. */
  readonly application?: string;
  readonly admit?: HelloAdmission;
  readonly refused?: (peer: string, message: string, status: StatusCode) => void;
  readonly connectFailed?: (peer: string, reason: string) => void;
  readonly authenticationFailed?: () => void;
  /** A frame's pieces were written (a worker takes back its read buffers). */
  readonly written?: (pieces: readonly Uint8Array[]) => void;
  /** Application authentication (svc.auth.enabled); absent: off. */
  readonly auth?: TransportAuth;
  /** Where partly received frames are counted and bounded (servers); absent: not counted. */
  readonly receiveMemory?: ReceiveMemory;
  /** Where large frame bodies are read into and lent again (a worker's pool); absent: fresh memory each. */
  readonly receiveBodies?: ReceiveBodies;
  /**
   * The error a configuration mistake (svc.ssl.*) is thrown as: the client library's own error type for a client,
   * so that an application catches one type. Absent: TransportConfigError (servers exit 2 on it).
   */
  readonly configError?: (message: string) => Error;
  /** Test-only (core/planted-bugs.ts): a server's ServerTestHooks.plantedBug, for the transport's share of it. */
  readonly plantedBug?: PlantedBug;
  /** The members of the master group this process talks to (one for a single master); absent: none. */
  readonly masters?: readonly Address[];
}

/** The transport, address book and node registry of one process, with the limits its configuration sets. */
export function nodeNetwork(options: NodeNetworkOptions): NodeNetwork {
  const host = new NodeHost();
  const addresses = new AddressBook();
  const conf = options.conf;
  const tls = transportTls(conf, options.role, options.configError);
  let transport: Transport;
  let masters: MasterFollower | undefined;
  const hooks: FollowerHooks = {
    deliver: (envelope) => masters?.received(envelope) === true || host.deliver(envelope),
    connectFailed: (peer, reason) => {
      masters?.unreachable(peer);
      options.connectFailed?.(peer, reason);
    },
    sendFailed: (envelope, sent) => {
      if (masters?.sendFailed(envelope) !== true) host.sendFailed(envelope, sent);
    },
  };
  try {
    transport = newTransport(options, host, addresses, tls, hooks);
  } catch (error) {
    // Building the TLS contexts checks the files' contents: a key that is not the certificate's, a wrong passphrase.
    if (tls === undefined) throw error;
    throw configError(
      options.configError,
      `svc.ssl.certFile, svc.ssl.keyFile, svc.ssl.keyPassword, svc.ssl.caFile: ${(error as Error).message}`,
    );
  }
  if (options.masters !== undefined) {
    masters = new MasterFollower({
      masterId: masterNodeId(),
      members: options.masters,
      addresses,
      logger: options.logger,
      send: (envelope) => transport.send(envelope),
      failed: (envelope) => host.sendFailed(envelope),
    });
  }
  const follower = masters;
  return {
    transport,
    host,
    addresses,
    send:
      follower === undefined ? (envelope) => transport.send(envelope) : (envelope) => follower.send(envelope),
    ...(follower === undefined ? {} : { masters: follower }),
  };
}

interface FollowerHooks {
  readonly deliver: (envelope: Envelope) => boolean;
  readonly connectFailed: (peer: string, reason: string) => void;
  readonly sendFailed: (envelope: WireEnvelope, sent?: boolean) => void;
}

/** svc.network.silentPeer.pingInterval and .timeout by default (the registry's; test/silent-peer-defaults checks). */
export const SILENT_PEER_DEFAULTS: SilentPeerSettings = { pingAfterMs: 1_000, silentAfterMs: 10_000 };

/** The silent-peer bounds a process uses; a ping interval not below the timeout is a configuration error. */
function silentPeerSettings(
  conf: NodeNetworkOptions['conf'],
  toError: ((message: string) => Error) | undefined,
): SilentPeerSettings {
  if (!conf.has('svc.network.silentPeer.timeout')) return SILENT_PEER_DEFAULTS;
  const settings = {
    pingAfterMs: conf.getDurationMs('svc.network.silentPeer.pingInterval'),
    silentAfterMs: conf.getDurationMs('svc.network.silentPeer.timeout'),
  };
  if (!(settings.pingAfterMs > 0 && settings.pingAfterMs < settings.silentAfterMs)) {
    throw configError(
      toError,
      `svc.network.silentPeer.pingInterval (${settings.pingAfterMs} ms) must be above 0 and below ` +
        `svc.network.silentPeer.timeout (${settings.silentAfterMs} ms): a silent peer is pinged before it is given up`,
    );
  }
  return settings;
}

function newTransport(
  options: NodeNetworkOptions,
  host: NodeHost,
  addresses: AddressBook,
  tls: TransportTls | undefined,
  hooks: FollowerHooks,
): Transport {
  const conf = options.conf;
  const self: Hello = {
    role: options.role,
    release: options.release,
    nodeId: options.nodeId,
    ...(options.application === undefined ? {} : { application: options.application }),
    // Every process of this release follows a moving leader (./master-follower.ts).
    followsLeader: true,
  };
  return new Transport({
    self,
    maxFrameBytes: conf.getBytes('svc.network.frame.maxSize'),
    connectTimeoutMs: conf.getDurationMs('svc.network.connect.timeout'),
    frameTimeoutMs: conf.getDurationMs('svc.network.timeout'),
    // Keys of 0.6.0: a client resolving its configuration as of an older release has none of them (their
    // defaults apply).
    ...(conf.has('svc.network.send.maxQueuedBytes')
      ? { maxQueuedBytes: conf.getBytes('svc.network.send.maxQueuedBytes') }
      : {}),
    ...(conf.has('svc.network.port.maxConnections')
      ? { maxConnectionsPerPort: conf.getInt('svc.network.port.maxConnections') }
      : {}),
    // Keys of 0.6.0, but the behaviour of every release svc presents: an older client has their defaults.
    silentPeer: silentPeerSettings(conf, options.configError),
    connectionsPerPeer: (service) =>
      (options.presented ?? conf).getInt(`svc.${moduleOf(service, options.role)}.io.numConnectionsPerPeer`),
    ...(conf.has('svc.log.summary.interval')
      ? { logSummaryIntervalMs: conf.getDurationMs('svc.log.summary.interval') }
      : {}),
    ...(options.receiveMemory === undefined ? {} : { receiveMemory: options.receiveMemory }),
    ...(options.receiveBodies === undefined ? {} : { receiveBodies: options.receiveBodies }),
    addresses,
    logger: options.logger,
    ...(options.admit === undefined ? {} : { admit: options.admit }),
    isLocal: (node) => host.has(node),
    deliver: hooks.deliver,
    sendFailed: hooks.sendFailed,
    ...(options.refused === undefined ? {} : { refused: options.refused }),
    connectFailed: hooks.connectFailed,
    ...(options.written === undefined ? {} : { written: options.written }),
    ...(options.authenticationFailed === undefined
      ? {}
      : { authenticationFailed: options.authenticationFailed }),
    ...(tls === undefined ? {} : { tls }),
    ...(options.auth === undefined ? {} : { auth: options.auth }),
    ...(options.plantedBug === undefined ? {} : { plantedBug: options.plantedBug }),
  });
}

/**
 * The module (conf/registry/spec.ts MODULES) of this process's connections to a port serving `service`: a client's
 * pushes and fetches are its `data` module, a worker's connections to a peer's replicate port its `replicate`, and
 * everything to an rpc port the control plane, `rpc`.
 */
function moduleOf(service: string, role: PeerRole): string {
  if (role === 'client' && (service === 'push' || service === 'fetch')) return 'data';
  return service;
}

function configError(toError: ((message: string) => Error) | undefined, message: string): Error {
  return toError?.(message) ?? new TransportConfigError(message);
}

/** The value of an optional string key, or undefined when nothing sets it. */
function optional(conf: ResolvedConfig, key: string): string | undefined {
  const value = conf.get(key);
  return value === undefined || value === '' ? undefined : String(value);
}

/**
 * TLS settings of the process's connections from svc.ssl.* (undefined: plaintext). A master or worker must have a
 * certificate and key; a client needs them only to listen (an application's lifecycle manager), which the transport
 * refuses with the keys to set. A file that cannot be read, or a key and certificate that do not fit, is a
 * configuration error here, before anything listens.
 */
export function transportTls(
  conf: ResolvedConfig,
  role: PeerRole,
  toError?: (message: string) => Error,
): TransportTls | undefined {
  if (!conf.getBoolean('svc.ssl.enabled')) return undefined;
  const fail = (message: string): Error => configError(toError, message);
  const certFile = optional(conf, 'svc.ssl.certFile');
  const keyFile = optional(conf, 'svc.ssl.keyFile');
  const caFile = optional(conf, 'svc.ssl.caFile');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw fail('svc.ssl.certFile and svc.ssl.keyFile go together: set both (PEM files) or neither');
  }
  if (role !== 'client' && certFile === undefined) {
    throw fail(`svc.ssl.enabled is on: a ${role} needs svc.ssl.certFile and svc.ssl.keyFile (PEM files)`);
  }
  const read = (key: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw fail(`${key} ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  };
  const passphrase = optional(conf, 'svc.ssl.keyPassword');
  return {
    ...(certFile === undefined || keyFile === undefined
      ? {}
      : {
          credentials: {
            cert: read('svc.ssl.certFile', certFile),
            key: read('svc.ssl.keyFile', keyFile),
            ...(passphrase === undefined ? {} : { passphrase }),
          },
        }),
    ...(caFile === undefined ? {} : { ca: read('svc.ssl.caFile', caFile) }),
  };
}
