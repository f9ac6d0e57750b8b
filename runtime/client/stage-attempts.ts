// Stage attempts as the client library's users see them: the range checks in the library's own errors, and the
// advice a reader whose data is lost gives. The id scheme itself is the core's (core/client/stage-attempts.ts),
// shared with the simulator's engine.
import {
  clusterShuffleId,
  isShuffleId,
  isStageAttempt,
  MAX_STAGE_ATTEMPT,
  SHUFFLE_ID_LIMIT,
  stageOf,
} from '../../core/client/stage-attempts.ts';
import { SvcArgumentError } from './errors.ts';

export { MAX_STAGE_ATTEMPT, SHUFFLE_ID_LIMIT, type ShuffleStage } from '../../core/client/stage-attempts.ts';

export function checkShuffleId(shuffleId: unknown): asserts shuffleId is number {
  if (!isShuffleId(shuffleId)) {
    throw new SvcArgumentError(
      `a shuffle id is a whole number from 0 to ${SHUFFLE_ID_LIMIT - 1}, got ${JSON.stringify(shuffleId) ?? String(shuffleId)}`,
    );
  }
}

export function checkStageAttempt(stageAttempt: unknown): asserts stageAttempt is number {
  if (!isStageAttempt(stageAttempt)) {
    throw new SvcArgumentError(
      `a stage attempt is a whole number from 0 to ${MAX_STAGE_ATTEMPT} (application.rerunMapStage gives the next ` +
        `one), got ${JSON.stringify(stageAttempt) ?? String(stageAttempt)}`,
    );
  }
}

/** The cluster's id of stage attempt `stageAttempt` of the application's shuffle `shuffleId`, both checked. */
export function checkedClusterShuffleId(shuffleId: number, stageAttempt: number): number {
  checkShuffleId(shuffleId);
  checkStageAttempt(stageAttempt);
  return clusterShuffleId({ shuffleId, stageAttempt });
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
