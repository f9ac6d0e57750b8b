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

/** `id-epoch-mode` with the mode's code: the partition file's name. */
export function partitionFileName(
  location: Pick<PartitionLocation, 'partitionId' | 'epoch' | 'mode'>,
): string {
  return `${location.partitionId}-${location.epoch}-${PARTITION_MODE_CODE[location.mode]}`;
}
