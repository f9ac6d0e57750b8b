import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SecretAnswer } from '../../core/handshake/index.ts';
import type { Principal } from '../../core/machines/effects.ts';
import { AUTH_NONCE_BYTES, type Hello } from '../wire/index.ts';

/**
 * Application authentication in the handshake (svc.auth.enabled; docs/protocol.md, Authentication). The accepting
 * side sends a fresh nonce; the connecting side answers with HMAC-SHA256(secret, transcript), where the transcript
 * binds a domain string, the hello's claims (role, node id, application) and the nonce. The secret never travels:
 * only a process that knows it can answer, and an answer is worth nothing on another connection (another nonce)
 * or for another claim (another transcript).
 */
export const AUTH_DOMAIN = 'svc-auth-v1';

/** What a process with authentication on needs of its transport. */
export interface TransportAuth {
  /**
   * The secret this process proves on the connections it opens: the cluster's internal secret (masters and
   * workers) or its application's secret (a lifecycle manager, an executor). Its hello says which.
   */
  readonly secret: string;
  /** Who this process is: the principal of envelopes between its own nodes (no socket, nothing to prove). */
  readonly principal: Principal;
  /**
   * The secret a connecting peer must prove for what its hello claims, and the principal it then is. `fresh` asks
   * again without a cache, after a proof did not match a cached secret (the application may have registered again).
   * May answer later (a worker asks the master). Asked again for a connection accepted with `later`, at its next
   * envelopes, until it answers the secret.
   */
  readonly expectedSecret: (hello: Hello, fresh: boolean) => ExpectedSecret | Promise<ExpectedSecret>;
}

/**
 * The answer of a process's secret source to the handshake machine's `lookupSecret` (core/handshake/types.ts): the
 * secret to check against (`cached`: worth one fresh lookup after a mismatch), `later` (a master that does not know
 * the application yet; asked again at the connection's next envelopes), or `refused`.
 */
export type ExpectedSecret = SecretAnswer;

/** A fresh challenge: 32 random bytes. */
export function newNonce(): Uint8Array {
  return randomBytes(AUTH_NONCE_BYTES);
}

/**
 * The bytes a proof covers: `svc-auth-v1`, the hello's role, node id and application, and the nonce, each preceded
 * by its length (u32 big-endian), so that no two different claims share a transcript.
 */
export function authTranscript(hello: Hello, nonce: Uint8Array): Buffer {
  const parts = [
    Buffer.from(AUTH_DOMAIN, 'utf8'),
    Buffer.from(hello.role, 'utf8'),
    Buffer.from(hello.nodeId, 'utf8'),
    Buffer.from(hello.application ?? '', 'utf8'),
    Buffer.from(nonce.buffer, nonce.byteOffset, nonce.byteLength),
  ];
  const out: Buffer[] = [];
  for (const part of parts) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(part.byteLength);
    out.push(length, part);
  }
  return Buffer.concat(out);
}

/** The proof of `secret` for `hello` over `nonce`. */
export function authMac(secret: string, hello: Hello, nonce: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(authTranscript(hello, nonce)).digest();
}

/** Whether `mac` proves `secret` for `hello` over `nonce`, compared in constant time. */
export function proofMatches(secret: string, hello: Hello, nonce: Uint8Array, mac: Uint8Array): boolean {
  const expected = authMac(secret, hello, nonce);
  return mac.byteLength === expected.byteLength && timingSafeEqual(expected, mac);
}

export { authAdvice } from '../../core/handshake/index.ts';
export { describePrincipal } from '../../core/protocol/speakers.ts';
