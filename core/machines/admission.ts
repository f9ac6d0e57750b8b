import { admitClient } from '../release/admission.ts';
import type { Release } from '../release/version.ts';
import type { Envelope } from './effects.ts';
import { count, log, reply, replyToOf, type Outbox } from './outbox.ts';

/**
 * Admission by release for a client request. A refused client gets StatusResponse CLIENT_RELEASE_REFUSED with a
 * message naming both releases and the upgrade order; `adviseOnMismatch` logs the same-release advice for requests
 * that start a conversation (a reserve, an application's registration), not for every push. Shared by the master,
 * the worker and the lifecycle manager, which serves its application's executors as a server serves its clients
 * (`role` names the server in the log).
 */
export function admitted(
  out: Outbox,
  role: 'master' | 'worker' | 'lifecycle-manager',
  serverRelease: Release,
  envelope: Envelope,
  adviseOnMismatch = false,
): boolean {
  const admission = admitClient(serverRelease, envelope.fromRelease);
  if (admission.admitted) {
    if (adviseOnMismatch && admission.advice !== undefined) {
      log(out, 'info', `${role}.client.releaseAdvice`, { client: envelope.from, advice: admission.advice });
    }
    return true;
  }
  log(out, 'warn', `${role}.client.refused`, {
    client: envelope.from,
    request: envelope.message.type,
    clientRelease: envelope.fromRelease,
    reason: admission.reason,
  });
  count(out, 'ClientReleaseRefusedCount');
  reply(out, replyToOf(envelope), {
    type: 'StatusResponse',
    status: 'CLIENT_RELEASE_REFUSED',
    message: admission.message,
  });
  return false;
}
