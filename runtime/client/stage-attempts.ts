// Stage rerun (svc.client.spark.stageRerun.enabled, on by default from 0.6.0): when a shuffle's data is lost (a
// worker without a replica is gone), the engine writes the whole map stage again. The cluster never registers a
// shuffle id twice (a late task of the abandoned stage must not write into the new one), so each stage attempt of an
// application's shuffle is a shuffle of its own for the cluster, exactly as the simulator's engine reruns a stage.
// The cluster's id is computed from the application's id and the attempt, so that every executor finds the same
// one without asking anybody: the driver only hands its executors the stage attempt, as it hands them their task.
import { SvcClientError } from './errors.ts';

/** Application shuffle ids are below this; the cluster's id of stage attempt `a` of shuffle `s` is `a × 2^20 + s`. */
export const SHUFFLE_ID_LIMIT = 1 << 20;
/** The largest stage attempt (the cluster's shuffle ids are 31-bit). */
export const MAX_STAGE_ATTEMPT = 2047;

/** One attempt of an application's map stage: what the driver hands its executors after a rerun. */
export interface ShuffleStage {
  readonly shuffleId: number;
  readonly stageAttempt: number;
}

export function checkShuffleId(shuffleId: unknown): asserts shuffleId is number {
  if (!(
    Number.isInteger(shuffleId) &&
    (shuffleId as number) >= 0 &&
    (shuffleId as number) < SHUFFLE_ID_LIMIT
  )) {
    throw new SvcClientError(
      `a shuffle id is a whole number from 0 to ${SHUFFLE_ID_LIMIT - 1}, got ${JSON.stringify(shuffleId) ?? String(shuffleId)}`,
    );
  }
}

export function checkStageAttempt(stageAttempt: unknown): asserts stageAttempt is number {
  if (!(
    Number.isInteger(stageAttempt) &&
    (stageAttempt as number) >= 0 &&
    (stageAttempt as number) <= MAX_STAGE_ATTEMPT
  )) {
    throw new SvcClientError(
      `a stage attempt is a whole number from 0 to ${MAX_STAGE_ATTEMPT} (application.rerunMapStage gives the next ` +
        `one), got ${JSON.stringify(stageAttempt) ?? String(stageAttempt)}`,
    );
  }
}

/** The id the cluster knows stage attempt `stageAttempt` of the application's shuffle `shuffleId` by. */
export function clusterShuffleId(shuffleId: number, stageAttempt: number): number {
  checkShuffleId(shuffleId);
  checkStageAttempt(stageAttempt);
  return stageAttempt * SHUFFLE_ID_LIMIT + shuffleId;
}

/** The application's shuffle and stage attempt of a cluster shuffle id (the inverse of clusterShuffleId). */
export function stageOf(clusterId: number): ShuffleStage {
  return { shuffleId: clusterId % SHUFFLE_ID_LIMIT, stageAttempt: Math.floor(clusterId / SHUFFLE_ID_LIMIT) };
}

/** What a reader whose data is lost tells the application to do, in words for any engine. */
export function rerunAdvice(clusterId: number): string {
  const { shuffleId, stageAttempt } = stageOf(clusterId);
  return (
    `. The data of shuffle ${shuffleId} (stage attempt ${stageAttempt}) is lost: rerun its map stage. ` +
    `On the driver call \`await application.rerunMapStage(${shuffleId})\` (it gives stage attempt ` +
    `${stageAttempt + 1}), then run every map again through ` +
    `\`client.shuffle(${shuffleId}, shape, { stageAttempt: ${stageAttempt + 1} })\` and read from that handle`
  );
}
