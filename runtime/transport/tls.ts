import { isIP, type Socket } from 'node:net';
import {
  connect as tlsConnect,
  createSecureContext,
  createServer as createTlsServer,
  TLSSocket,
  type SecureContext,
  type Server as TlsServer,
} from 'node:tls';
import type { Address } from './addresses.ts';

/**
 * TLS of a process's connections (svc.ssl.*, docs/protocol.md "TLS"): one setting for every module, both ways. A
 * process that listens presents `credentials`; every connection it opens verifies the peer's certificate against
 * `ca` (or the authorities Node.js trusts) and the host it connects to.
 */
export interface TransportTls {
  /** PEM certificate chain and key this process serves with; absent: it can connect with TLS but not listen. */
  readonly credentials?: TlsCredentials;
  /** PEM certificate authorities a peer's certificate must chain to; absent: Node.js's bundled authorities. */
  readonly ca?: Buffer;
}

export interface TlsCredentials {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly passphrase?: string;
}

/** A TLS setting a server cannot start with (a file missing, a key that does not fit its certificate). */
export class TransportConfigError extends Error {
  override readonly name = 'TransportConfigError';
}

/** The oldest TLS version svc speaks or accepts. */
export const TLS_MIN_VERSION = 'TLSv1.2';

/** What TLS needs, ready to use: the key and certificates are checked once, here (a bad one fails at start). */
export class TlsSetup {
  private readonly clientContext: SecureContext;

  constructor(readonly settings: TransportTls) {
    const ca = settings.ca === undefined ? {} : { ca: settings.ca };
    // A key that is not the certificate's, or a wrong passphrase, throws now rather than at the first peer.
    if (settings.credentials !== undefined) createSecureContext({ ...settings.credentials, ...ca });
    this.clientContext = createSecureContext({ ...ca, minVersion: TLS_MIN_VERSION });
  }

  /** A TLS server whose plaintext side is `accept`; the handshake must end within `handshakeTimeoutMs`. */
  createServer(handshakeTimeoutMs: number, accept: (socket: Socket) => void): TlsServer {
    const credentials = this.settings.credentials;
    if (credentials === undefined) {
      throw new TransportConfigError(
        'svc.ssl.enabled is on but this process has no certificate to listen with: set svc.ssl.certFile and ' +
          'svc.ssl.keyFile (PEM)',
      );
    }
    // The server builds its own context from these (tls.createServer does not take a `secureContext`).
    return createTlsServer(
      {
        ...credentials,
        ...(this.settings.ca === undefined ? {} : { ca: this.settings.ca }),
        handshakeTimeout: handshakeTimeoutMs,
        minVersion: TLS_MIN_VERSION,
      },
      accept,
    );
  }

  /**
   * Opens a TLS connection to `address`, verifying the peer's certificate: against the CA, and its names against
   * the host (a DNS name through SNI and the certificate's DNS names, an IP address against its IP addresses).
   */
  connect(address: Address): TLSSocket {
    return tlsConnect({
      host: address.host,
      port: address.port,
      secureContext: this.clientContext,
      minVersion: TLS_MIN_VERSION,
      rejectUnauthorized: true,
      // SNI carries names only; Node checks an IP host against the certificate's IP addresses without it.
      ...(isIP(address.host) === 0 ? { servername: address.host } : {}),
    });
  }
}

/**
 * Whether the first bytes a plaintext connection received are a TLS record (a handshake or an alert): no svc frame
 * can start so, since the first frame is a small hello and `0x1503`/`0x1603` as a length prefix is over 350 MB.
 */
export function looksLikeTls(chunk: Uint8Array): boolean {
  return chunk.length >= 2 && (chunk[0] === 0x16 || chunk[0] === 0x15) && chunk[1] === 0x03;
}

const TLS_CODE = /^(ERR_(TLS|SSL)_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_OSSL_)/;
const CERTIFICATE_CODE = /^(UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_TLS_CERT_)/;

/** OpenSSL's reason out of its error line (`…:error:0A000410:SSL routines:func:reason:file:line:data`). */
function opensslText(message: string): string {
  const match = /^[0-9A-F]+:error:[0-9A-F]+:[^:]*:[^:]*:([^:]+):/.exec(message);
  return (match?.[1] ?? message.split('\n')[0] ?? message).trim();
}

/** Why a socket failed, in words an operator can act on; TLS failures say what to check. */
export function socketErrorReason(error: NodeJS.ErrnoException, socket: Socket): string {
  const code = error.code ?? '';
  if (!(socket instanceof TLSSocket) || !TLS_CODE.test(code)) {
    return `socket error: ${error.code ?? error.message}`;
  }
  const what = `TLS failed: ${opensslText(error.message)} (${code})`;
  if (CERTIFICATE_CODE.test(code)) {
    return `${what}; the peer's certificate must chain to svc.ssl.caFile and name the host connected to`;
  }
  if (/_ALERT_/.test(code)) return `${what}; the peer refused the handshake (its log says why)`;
  return what;
}

/** The reason logged for a peer that never completed the TLS handshake on a TLS port. */
export function tlsRefusalReason(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  if (/WRONG_VERSION_NUMBER|HTTP_REQUEST|UNKNOWN_PROTOCOL|PACKET_LENGTH_TOO_LONG|RECORD_LENGTH/.test(code)) {
    return (
      `the peer does not speak TLS (${code}): this port requires TLS (svc.ssl.enabled); a plaintext peer must set ` +
      'svc.ssl.enabled=true and trust this certificate (svc.ssl.caFile)'
    );
  }
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') {
    return 'the peer did not complete a TLS handshake in time (svc.network.connect.timeout)';
  }
  if (code === 'ECONNRESET') {
    return (
      'the peer closed the connection during the TLS handshake (ECONNRESET): it may not trust this ' +
      'certificate (its svc.ssl.caFile) or not accept the host names in it (svc.ssl.certFile)'
    );
  }
  return `the TLS handshake failed: ${opensslText(error.message)} (${code})`;
}
