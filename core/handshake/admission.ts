import type { StatusCode } from '../domain/status.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import { admitClient } from '../release/admission.ts';
import type { Release } from '../release/version.ts';
import type { Hello } from './types.ts';

/**
 * Who an accepting process lets in by release. A process that serves clients (a master, a worker, an application's
 * lifecycle manager) admits them by the core's release rule (core/release/admission.ts), the same one its machines
 * apply to every message; masters and workers talk to each other whatever their releases, as a rolling upgrade
 * needs. A process that serves no clients (an executor) admits every release: it refuses connections, if at all,
 * by authentication.
 */
export interface HelloAdmission {
  readonly release: Release;
  readonly servesClients: boolean;
  /** Only the proof tests set it (core/planted-bugs.ts). */
  readonly plantedBug?: PlantedBug;
}

export type HelloVerdict =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly status: StatusCode; readonly message: string };

/** Whether `hello` is admitted by release, and if not, the refusal the hello reply carries. */
export function admitHello(rule: HelloAdmission, hello: Hello): HelloVerdict {
  if (!rule.servesClients || hello.role !== 'client') return { accepted: true };
  const admission = admitClient(rule.release, hello.release);
  if (admission.admitted || rule.plantedBug === 'refused-release-admitted') return { accepted: true };
  return { accepted: false, status: 'CLIENT_RELEASE_REFUSED', message: admission.message };
}
