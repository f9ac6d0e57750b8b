import { chance, logUniform, pick, streamRng } from '../world/random.ts';

/** Share of swarm clusters whose workers run congestion control. */
const CONGESTION_SHARE = 0.3;

/**
 * The workers' congestion-control settings of a seed: off in most clusters; in the others watermarks low enough
 * for the simulated data to pass them (a few writes' worth of disk buffer, speeds of a small job), so that episodes
 * start and end within a run and clients slow down and speed up again. Drawn from a stream of its own: no other
 * draw moves.
 */
export function congestionOverrides(seed: number): Record<string, string> {
  const rng = streamRng(seed, 'congestion');
  if (!chance(rng, CONGESTION_SHARE)) return {};
  const diskHigh = Math.round(logUniform(rng, 256, 65_536));
  const overrides: Record<string, string> = {
    'svc.worker.congestionControl.enabled': 'true',
    'svc.worker.congestionControl.diskBuffer.high.watermark': String(diskHigh),
    'svc.worker.congestionControl.diskBuffer.low.watermark': String(Math.floor(diskHigh / 4)),
    'svc.worker.congestionControl.sample.time.window': pick(rng, ['200ms', '1s', '5s']),
    'svc.worker.congestionControl.check.interval': pick(rng, ['10ms', '50ms']),
  };
  if (chance(rng, 0.5)) {
    const userHigh = Math.round(logUniform(rng, 1_024, 1_048_576));
    overrides['svc.worker.congestionControl.userProduceSpeed.high.watermark'] = String(userHigh);
    overrides['svc.worker.congestionControl.userProduceSpeed.low.watermark'] = String(
      Math.floor(userHigh / 2),
    );
  }
  if (chance(rng, 0.25)) {
    const workerHigh = Math.round(logUniform(rng, 4_096, 4_194_304));
    overrides['svc.worker.congestionControl.workerProduceSpeed.high.watermark'] = String(workerHigh);
    overrides['svc.worker.congestionControl.workerProduceSpeed.low.watermark'] = String(
      Math.floor(workerHigh / 2),
    );
  }
  return overrides;
}

/** The run's congestion counts for the swarm summary, from the trace's metric counters. */
export function congestionCounts(
  counters: ReadonlyMap<string, number>,
  enabled: boolean,
): Record<string, number> {
  if (!enabled) return {};
  return {
    'congestion.clusters': 1,
    'congestion.episodes': counters.get('metric.CongestionEpisodeCount') ?? 0,
    'congestion.congestedReplies': counters.get('metric.PushDataCongestedCount') ?? 0,
  };
}
