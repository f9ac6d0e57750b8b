import type { AppId, ShuffleId } from '../../domain/index.ts';
import type { MessageOf } from '../../protocol/messages.ts';

export type FileGroupAnswer = MessageOf<'GetReducerFileGroupResponse'>;

/**
 * The file groups one executor's shuffle client holds, by shuffle: a successful GetReducerFileGroup answer
 * of a shuffle is kept and handed to every later reduce task of that shuffle in the same executor
 * (ReduceTaskConfig.cachedFileGroup), which then reads without asking the lifecycle manager. The reference client
 * does the same (one ask per shuffle per executor, not per task), which is what keeps the lifecycle manager's load
 * proportional to executors rather than to reduce tasks.
 *
 * Only SUCCESS is kept: a committed shuffle's file group never changes, whereas STAGE_END_TIMEOUT means "ask again"
 * and SHUFFLE_DATA_LOST is answered by a stage rerun under a new shuffle id. A shuffle is forgotten when it is
 * unregistered (the engine is done with it).
 */
export class FileGroupCache {
  private readonly groups = new Map<string, FileGroupAnswer>();

  remember(appId: AppId, shuffleId: ShuffleId, answer: FileGroupAnswer): void {
    if (answer.status === 'SUCCESS') this.groups.set(key(appId, shuffleId), answer);
  }

  lookup(appId: AppId, shuffleId: ShuffleId): FileGroupAnswer | undefined {
    return this.groups.get(key(appId, shuffleId));
  }

  forget(appId: AppId, shuffleId: ShuffleId): void {
    this.groups.delete(key(appId, shuffleId));
  }

  get size(): number {
    return this.groups.size;
  }
}

function key(appId: AppId, shuffleId: ShuffleId): string {
  return `${appId}/${shuffleId}`;
}
