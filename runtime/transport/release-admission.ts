import type { HelloAdmission } from '../../core/handshake/index.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';
import type { Release } from '../../core/release/version.ts';

/**
 * The handshake rule of a process that serves clients (a master, a worker, an application's lifecycle manager):
 * clients are admitted by the core's release rule, decided in the handshake machine (core/handshake/admission.ts);
 * masters and workers talk to each other whatever their releases, as a rolling upgrade needs. `plantedBug` only
 * from the test-only server entry (runtime/testing/test-server.ts).
 */
export function serverAdmission(serverRelease: Release, plantedBug?: PlantedBug): HelloAdmission {
  return {
    release: serverRelease,
    servesClients: true,
    ...(plantedBug === undefined ? {} : { plantedBug }),
  };
}
