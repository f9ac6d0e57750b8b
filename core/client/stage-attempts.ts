/**
 * Stage rerun (svc.client.spark.stageRerun.enabled, on by default from 0.6.0): when a shuffle's data is lost (a
 * worker without a replica is gone), the engine writes the whole map stage again. The cluster never registers a
 * shuffle id twice (a late task of the abandoned stage must not write into the new one), so each stage attempt of an
 * application's shuffle is a shuffle of its own for the cluster. Its id is computed from the application's shuffle
 * id and the attempt, so that every executor finds the same one without asking anybody: the driver only hands its
 * executors the stage attempt, as it hands them their task. The client library (runtime/client/) and the
 * simulator's engine (sim/workload/engine.ts) both number stage attempts here.
 */

/** Application shuffle ids are below this; the cluster's id of stage attempt `a` of shuffle `s` is `a × 2^20 + s`. */
export const SHUFFLE_ID_LIMIT = 1 << 20;
/** The largest stage attempt (the cluster's shuffle ids are 31-bit). */
export const MAX_STAGE_ATTEMPT = 2047;

/** One attempt of an application's map stage: what the driver hands its executors after a rerun. */
export interface ShuffleStage {
  readonly shuffleId: number;
  readonly stageAttempt: number;
}

/** Whether `shuffleId` is an application shuffle id: a whole number from 0 to SHUFFLE_ID_LIMIT - 1. */
export function isShuffleId(shuffleId: unknown): shuffleId is number {
  return (
    Number.isInteger(shuffleId) && (shuffleId as number) >= 0 && (shuffleId as number) < SHUFFLE_ID_LIMIT
  );
}

/** Whether `stageAttempt` is a stage attempt: a whole number from 0 to MAX_STAGE_ATTEMPT. */
export function isStageAttempt(stageAttempt: unknown): stageAttempt is number {
  return (
    Number.isInteger(stageAttempt) &&
    (stageAttempt as number) >= 0 &&
    (stageAttempt as number) <= MAX_STAGE_ATTEMPT
  );
}

/**
 * The id the cluster knows stage attempt `stageAttempt` of the application's shuffle `shuffleId` by: attempt 0 is
 * the application's id itself, so that the ids an application used before stage attempts existed do not change.
 * Both must be in range (isShuffleId, isStageAttempt); the callers say so in their own words.
 */
export function clusterShuffleId(stage: ShuffleStage): number {
  return stage.stageAttempt * SHUFFLE_ID_LIMIT + stage.shuffleId;
}

/** The application's shuffle and stage attempt of a cluster shuffle id (the inverse of clusterShuffleId). */
export function stageOf(clusterId: number): ShuffleStage {
  return { shuffleId: clusterId % SHUFFLE_ID_LIMIT, stageAttempt: Math.floor(clusterId / SHUFFLE_ID_LIMIT) };
}
