import type { NodeId } from '../../core/machines/effects.ts';
import type { Rng } from '../../core/rng.ts';
import { chance, pick, uniform } from '../world/random.ts';
import type { World } from '../world/world.ts';

/** What stalled frames may be: a worker's largest frame and how long it waits for the rest of one. */
export interface StalledFrameLimits {
  /** `svc.network.frame.maxSize` of the workers: a larger frame is refused before it holds anything. */
  readonly frameMaxBytes: number;
  /** `svc.network.timeout`: the deadline of a frame under way, after which the worker closes its connection. */
  readonly timeoutMs: number;
}

/**
 * A hostile peer that has said hello (issue 24: no authentication when it is off) opens one to three connections to
 * a worker's push or replicate port, begins a frame of half to all of the largest size on each, and sends no more.
 * The worker holds them as partly received frames (they count in its back-pressure) until their deadline closes
 * them or, past the worker's limit, the core gives up the largest (sim/world/back-pressure.ts). Every draw comes
 * from `rng` (a stream of its own), and each visit is drawn whole before the run, so no other draw moves.
 */
export function scheduleStalledFrames(
  world: World,
  workers: readonly NodeId[],
  rng: Rng,
  visits: number,
  limits: StalledFrameLimits,
): void {
  for (let visit = 0; visit < visits; visit += 1) {
    const at = Math.round(uniform(rng, 1_000, 60_000));
    const worker = pick(rng, workers);
    const service = chance(rng, 0.5) ? 'push' : 'replicate';
    const connections = pick(rng, [1, 2, 3]);
    const sizes: number[] = [];
    for (let c = 0; c < connections; c += 1) {
      sizes.push(Math.max(1, Math.floor(uniform(rng, 0.5, 1) * (limits.frameMaxBytes - 1))));
    }
    world.schedule(at, `a peer stalls ${connections} ${service} frame(s) on ${worker}`, (w) => {
      sizes.forEach((bytes, c) =>
        w.stallFrame(worker, service, `stalled-peer-${visit}.${c}`, bytes, limits.timeoutMs),
      );
    });
  }
}
