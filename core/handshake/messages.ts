import type { StatusCode } from '../domain/status.ts';
import type { Envelope, NodeId } from '../machines/effects.ts';
import type { Release } from '../release/version.ts';
import type { Hello, PeerRole } from './types.ts';

/** Why a proof did not match, with what the peer should change. */
export function mismatchMessage(hello: Hello): string {
  if (hello.role === 'client') {
    return (
      `authentication failed: ${hello.nodeId} did not prove application ${hello.application ?? ''}’s secret ` +
      '(svc.auth.enabled): give it the secret the application registered (svc.client.auth.secret, or ' +
      'Application.secret to connectExecutor)'
    );
  }
  return (
    `authentication failed: ${hello.role} ${hello.nodeId} did not prove the cluster’s internal secret ` +
    '(svc.auth.enabled): set svc.auth.internal.secret (or svc.auth.internal.secretFile) to the same value on ' +
    'every master and worker'
  );
}

/** What a process whose peer asks for a proof it cannot give should set, by the role it has. */
export function authAdvice(role: PeerRole): string {
  return role === 'client'
    ? 'set svc.auth.enabled=true and the application’s secret (svc.client.auth.secret, or the secret option of ' +
        'startApplication and connectExecutor) on this client'
    : 'set svc.auth.enabled=true and svc.auth.internal.secret (or svc.auth.internal.secretFile), the same on every ' +
        'master and worker, on this server';
}

/**
 * The answer a request queued on a connection whose handshake the peer refused gets, in the peer's name: the
 * StatusResponse the peer's core would have given (CLIENT_RELEASE_REFUSED or AUTHENTICATION_FAILED with its
 * message), so that the asking machine learns why at once instead of from a timeout. Undefined for a message that
 * asked nothing. Both the runtime's transport and the simulated world answer with it.
 */
export function refusalAnswer(
  request: { readonly from: NodeId; readonly to: NodeId; readonly requestId?: number },
  refusal: { readonly status: StatusCode; readonly message: string; readonly release: Release },
): Envelope | undefined {
  if (request.requestId === undefined) return undefined;
  return {
    from: request.to,
    to: request.from,
    fromRelease: refusal.release,
    inReplyTo: request.requestId,
    message: { type: 'StatusResponse', status: refusal.status, message: refusal.message },
  };
}
