/** Identities of applications and shuffles. A shuffle is always scoped by its application. */
export type AppId = string;
export type ShuffleId = number;

/** The reference's shuffle key, `appId-shuffleId`; used in APIs and recovery stores. */
export type ShuffleKey = string;

export function shuffleKey(appId: AppId, shuffleId: ShuffleId): ShuffleKey {
  return `${appId}-${shuffleId}`;
}

/** Splits at the last '-' because application ids commonly contain dashes themselves. */
export function parseShuffleKey(key: ShuffleKey): { appId: AppId; shuffleId: ShuffleId } {
  const cut = key.lastIndexOf('-');
  const shuffleId = Number(key.slice(cut + 1));
  if (cut <= 0 || !Number.isInteger(shuffleId) || shuffleId < 0) {
    throw new RangeError(`'${key}' is not a shuffle key; expected <appId>-<shuffleId>`);
  }
  return { appId: key.slice(0, cut), shuffleId };
}

/** A map task attempt: speculative execution may run several attempts of one map; exactly one wins. */
export interface MapAttempt {
  readonly mapId: number;
  readonly attemptId: number;
}

/**
 * `3`, `0, 1, 2`, or with more than `maxIds` ids `0, 1, 2, 3, 4, 5, 6, 7 and 12 more`: a message that names the
 * partitions or maps a reason struck stays short however many it struck.
 */
export function idList(ids: readonly number[], maxIds = 8): string {
  const shown = ids.slice(0, maxIds).join(', ');
  return ids.length > maxIds ? `${shown} and ${ids.length - maxIds} more` : shown;
}
