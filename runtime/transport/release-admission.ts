import { admitClient } from '../../core/release/admission.ts';
import type { Release } from '../../core/release/version.ts';
import type { Admission } from './transport.ts';
import type { Hello } from '../wire/index.ts';

/**
 * The handshake rule of a process that serves clients (a master, a worker, an application's lifecycle manager):
 * clients are admitted by the core's release rule (core/release/admission.ts), the same one its machines apply to
 * every message; masters and workers talk to each other whatever their releases, as a rolling upgrade needs.
 */
export function serverAdmission(serverRelease: Release): (hello: Hello) => Admission {
  return (hello) => {
    if (hello.role !== 'client') return { accepted: true };
    const admission = admitClient(serverRelease, hello.release);
    return admission.admitted
      ? { accepted: true }
      : { accepted: false, status: 'CLIENT_RELEASE_REFUSED', message: admission.message };
  };
}
