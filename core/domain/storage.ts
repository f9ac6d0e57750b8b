/**
 * Storage tiers and the available-types mask. Codes and mask bits match the reference wire values so that a
 * location written by one side is read the same by the other.
 */
export const STORAGE_TYPES = ['MEMORY', 'HDD', 'SSD', 'HDFS', 'OSS', 'S3'] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];

/** Wire codes of StorageInfo.Type. */
export const STORAGE_TYPE_CODE: Readonly<Record<StorageType, number>> = {
  MEMORY: 0,
  HDD: 1,
  SSD: 2,
  HDFS: 3,
  OSS: 4,
  S3: 5,
};

/** Bits of the available-types mask. HDD and SSD share the LOCAL bit. A mask of 0 means "every type". */
export const MASK = { MEMORY: 1, LOCAL: 2, HDFS: 4, OSS: 8, S3: 16 } as const;
export const ALL_TYPES_MASK = 0;

export function maskBit(type: StorageType): number {
  switch (type) {
    case 'MEMORY':
      return MASK.MEMORY;
    case 'HDD':
    case 'SSD':
      return MASK.LOCAL;
    case 'HDFS':
      return MASK.HDFS;
    case 'OSS':
      return MASK.OSS;
    case 'S3':
      return MASK.S3;
  }
}

/** The mask of a list of types (for `svc.storage.availableTypes`). */
export function maskOf(types: readonly StorageType[]): number {
  return types.reduce((mask, type) => mask | maskBit(type), 0);
}

/** Whether `type` is permitted by `mask` (mask 0 permits every type). */
export function isTypeAvailable(mask: number, type: StorageType): boolean {
  return mask === ALL_TYPES_MASK || (mask & maskBit(type)) !== 0;
}

/** Whether the mask is exactly one distributed tier (the reference's HDFSOnly/S3Only/OSSOnly). */
export function isOnly(mask: number, type: 'HDFS' | 'OSS' | 'S3'): boolean {
  return mask === maskBit(type);
}

export function isDfsType(type: StorageType): type is 'HDFS' | 'OSS' | 'S3' {
  return type === 'HDFS' || type === 'OSS' || type === 'S3';
}

export function isLocalType(type: StorageType): type is 'HDD' | 'SSD' {
  return type === 'HDD' || type === 'SSD';
}

/** Parses a comma-separated list such as `HDD,SSD`; throws naming the bad entry and the valid names. */
export function parseStorageTypes(text: string): StorageType[] {
  const names = text
    .split(',')
    .map((name) => name.trim().toUpperCase())
    .filter((name) => name.length > 0);
  return names.map((name) => {
    if (!(STORAGE_TYPES as readonly string[]).includes(name)) {
      throw new RangeError(`'${name}' is not a storage type; expected one of ${STORAGE_TYPES.join(', ')}`);
    }
    return name as StorageType;
  });
}

/** Health of a disk as the worker's disk monitor reports it. */
export const DISK_STATUSES = [
  'HEALTHY',
  'READ_OR_WRITE_FAILURE',
  'IO_HANG',
  'HIGH_DISK_USAGE',
  'CRITICAL_ERROR',
] as const;
export type DiskStatus = (typeof DISK_STATUSES)[number];

/** Where a partition file lives: the tier, the disk (empty for memory and distributed tiers) and what it may use. */
export interface StorageInfo {
  readonly type: StorageType;
  readonly mountPoint: string;
  /** Mask of the tiers this location may be stored on; 0 permits every tier. */
  readonly availableTypes: number;
}
