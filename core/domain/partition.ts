import type { StorageInfo } from './storage.ts';
import type { WorkerId } from './worker.ts';

export type PartitionMode = 'PRIMARY' | 'REPLICA';

/** Wire codes of the mode (PRIMARY 0, REPLICA 1); also the last part of a partition file name. */
export const PARTITION_MODE_CODE: Readonly<Record<PartitionMode, number>> = { PRIMARY: 0, REPLICA: 1 };

/**
 * Where one copy of one reduce partition is written at one epoch. The epoch starts at 0 when slots are offered and
 * grows by one on every revive; a reader only ever sees committed locations.
 */
export interface PartitionLocation {
  readonly partitionId: number;
  readonly epoch: number;
  readonly worker: WorkerId;
  readonly mode: PartitionMode;
  readonly storage: StorageInfo;
  /** The other copy when replication is on (same id and epoch, the other mode); the peer carries no peer itself. */
  readonly peer?: Omit<PartitionLocation, 'peer'>;
}

/** `id-epoch`: identifies a location within a shuffle on one worker. */
export function uniqueId(location: Pick<PartitionLocation, 'partitionId' | 'epoch'>): string {
  return `${location.partitionId}-${location.epoch}`;
}

/**
 * A partition id and epoch as one exact number (any id of the protocol's int32, epochs below 2^21: they grow by one
 * per revive), or undefined where they do not fit one: a key for maps that would otherwise build a string per lookup.
 */
export function partitionEpochNumber(partitionId: number, epoch: number): number | undefined {
  if (
    Number.isInteger(partitionId) &&
    partitionId >= 0 &&
    partitionId < 2 ** 31 &&
    Number.isInteger(epoch) &&
    epoch >= 0 &&
    epoch < 2 ** 21
  )
    return partitionId * 2 ** 21 + epoch;
  return undefined;
}

/**
 * The partition id and epoch of a uniqueId in the form `uniqueId` makes (decimal, no sign, no leading zero), or
 * undefined for any other string: a lookup by the parsed numbers then matches exactly the ids a string lookup would.
 */
export function parseUniqueId(
  id: string,
): { readonly partitionId: number; readonly epoch: number } | undefined {
  const dash = id.indexOf('-');
  if (dash < 0) return undefined;
  const partitionId = decimalBetween(id, 0, dash);
  const epoch = decimalBetween(id, dash + 1, id.length);
  return partitionId === undefined || epoch === undefined ? undefined : { partitionId, epoch };
}

/** The canonical decimal in `text[from, to)`, exactly representable (at most 15 digits), or undefined. */
function decimalBetween(text: string, from: number, to: number): number | undefined {
  const digits = to - from;
  if (digits < 1 || digits > 15 || (digits > 1 && text.charCodeAt(from) === ZERO)) return undefined;
  let value = 0;
  for (let i = from; i < to; i += 1) {
    const digit = text.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return value;
}

const ZERO = 0x30;

/** `id-epoch-mode` with the mode's code: the partition file's name. */
export function partitionFileName(
  location: Pick<PartitionLocation, 'partitionId' | 'epoch' | 'mode'>,
): string {
  return `${location.partitionId}-${location.epoch}-${PARTITION_MODE_CODE[location.mode]}`;
}
