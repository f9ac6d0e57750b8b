import {
  parseShuffleKey,
  partitionFileName,
  STORAGE_TYPES,
  type PartitionLocation,
  type ShuffleKey,
} from '../../domain/index.ts';
import type { PartitionSplitMode } from '../../storage/index.ts';
import type { FileRef } from '../effects.ts';
import { chunkOffsets, fileDraft, shuffleRecord, shuffleUser } from './files.ts';
import type { PartitionFile, WorkerShuffle } from './state.ts';

/**
 * The worker's recovery store (the reference's recovery DB): one key per shuffle, `shuffle/<appId-shuffleId>`, whose
 * value is a versioned JSON record of the shuffle's committed files. It is written whenever a commit completes and
 * once more before a graceful exit, so that a restarted worker serves every committed file it still has on disk.
 * Memory files are left out: they do not survive a restart. A graceful exit moves them to disk first; one it could
 * not move before its deadline is reported lost (leaving.ts) and, being absent here, is not claimed after restart.
 */
export const RECOVERY_KEY_PREFIX = 'shuffle/';
export const RECOVERY_RECORD_VERSION = 1;

export function recoveryKey(shuffleKey: ShuffleKey): string {
  return `${RECOVERY_KEY_PREFIX}${shuffleKey}`;
}

interface FileRecord {
  readonly location: PartitionLocation;
  readonly file: FileRef;
  readonly bytes: number;
  readonly chunkOffsets: readonly number[];
}

interface ShuffleRecord {
  readonly version: number;
  readonly appId: string;
  readonly shuffleId: number;
  readonly splitThreshold: number;
  readonly splitMode: PartitionSplitMode;
  readonly memoryEnabled: boolean;
  /** Absent in records written before 3 December 2026 and for a client that names no user. */
  readonly user?: { readonly tenant?: string; readonly name: string };
  readonly mapAttempts?: readonly number[];
  readonly files: readonly FileRecord[];
}

/** The record of a shuffle's committed, durable files; null when there is none (the key is then deleted). */
export function encodeShuffleRecord(shuffle: WorkerShuffle): string | null {
  const files: FileRecord[] = [];
  for (const file of shuffle.files.values()) {
    if (file.status !== 'committed' || file.file.tier === 'MEMORY') continue;
    files.push({
      location: file.location,
      file: file.file,
      bytes: file.bytes,
      chunkOffsets: chunkOffsets(file),
    });
  }
  if (files.length === 0) return null;
  const record: ShuffleRecord = {
    version: RECOVERY_RECORD_VERSION,
    appId: shuffle.appId,
    shuffleId: shuffle.shuffleId,
    splitThreshold: shuffle.splitThreshold,
    splitMode: shuffle.splitMode,
    memoryEnabled: shuffle.memoryEnabled,
    ...(shuffle.user === undefined ? {} : { user: shuffle.user }),
    ...(shuffle.mapAttempts === undefined ? {} : { mapAttempts: shuffle.mapAttempts }),
    files,
  };
  return JSON.stringify(record);
}

export type DecodedShuffle =
  | { readonly ok: true; readonly shuffleKey: ShuffleKey; readonly shuffle: WorkerShuffle }
  | { readonly ok: false; readonly error: string };

/** Reads one recovery entry back; anything malformed is an error naming the key and what is wrong. */
export function decodeShuffleRecord(key: string, text: string): DecodedShuffle {
  const fail = (why: string): DecodedShuffle => ({
    ok: false,
    error: `recovery entry '${key}' cannot be restored: ${why}; its files will not be served (the engine recomputes them)`,
  });
  if (!key.startsWith(RECOVERY_KEY_PREFIX))
    return fail(`keys of this store start with '${RECOVERY_KEY_PREFIX}'`);
  const shuffleKey = key.slice(RECOVERY_KEY_PREFIX.length);
  try {
    parseShuffleKey(shuffleKey);
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return fail('the value is not JSON');
  }
  if (!isRecord(parsed)) return fail('the value is not a shuffle record');
  if (parsed.version !== RECOVERY_RECORD_VERSION) {
    return fail(
      `record version ${String(parsed.version)} is not ${RECOVERY_RECORD_VERSION}, the version this release reads`,
    );
  }
  const files = new Map<string, PartitionFile>();
  for (const record of parsed.files) {
    const offsets = record.chunkOffsets;
    const name = partitionFileName(record.location);
    files.set(
      name,
      fileDraft({
        name,
        location: record.location,
        file: record.file,
        status: 'committed',
        bytes: record.bytes,
        chunkStarts: offsets.length > 1 ? offsets.slice(0, -1) : [0],
        queue: [],
      }),
    );
  }
  return {
    ok: true,
    shuffleKey,
    shuffle: shuffleRecord({
      appId: parsed.appId,
      shuffleId: parsed.shuffleId,
      splitThreshold: parsed.splitThreshold,
      splitMode: parsed.splitMode,
      memoryEnabled: parsed.memoryEnabled,
      // A restored shuffle counts in the worker's usage per user (GET /api/v1/workers) as it did before the restart.
      // Built afresh: whatever else the stored object held stays out of the state.
      user: shuffleUser(parsed.user?.name, parsed.user?.tenant),
      files,
      mapAttempts: parsed.mapAttempts,
    }),
  };
}

function isRecord(value: unknown): value is ShuffleRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.appId === 'string' &&
    isNonNegativeInteger(record.shuffleId) &&
    typeof record.splitThreshold === 'number' &&
    (record.splitMode === 'SOFT' || record.splitMode === 'HARD') &&
    typeof record.memoryEnabled === 'boolean' &&
    (record.user === undefined || isUser(record.user)) &&
    (record.mapAttempts === undefined ||
      (Array.isArray(record.mapAttempts) && record.mapAttempts.every((n) => Number.isInteger(n)))) &&
    Array.isArray(record.files) &&
    record.files.every(isFileRecord)
  );
}

function isUser(value: unknown): value is ShuffleRecord['user'] {
  if (typeof value !== 'object' || value === null) return false;
  const user = value as Record<string, unknown>;
  return typeof user.name === 'string' && (user.tenant === undefined || typeof user.tenant === 'string');
}

function isFileRecord(value: unknown): value is FileRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  const file = record.file as Record<string, unknown> | null | undefined;
  const location = record.location as Record<string, unknown> | null | undefined;
  const offsets = record.chunkOffsets;
  return (
    isNonNegativeInteger(record.bytes) &&
    Array.isArray(offsets) &&
    offsets.length > 0 &&
    offsets.every(isNonNegativeInteger) &&
    offsets[offsets.length - 1] === record.bytes &&
    typeof file === 'object' &&
    file !== null &&
    typeof file.id === 'string' &&
    typeof file.mountPoint === 'string' &&
    (STORAGE_TYPES as readonly unknown[]).includes(file.tier) &&
    typeof location === 'object' &&
    location !== null &&
    isNonNegativeInteger(location.partitionId) &&
    isNonNegativeInteger(location.epoch) &&
    (location.mode === 'PRIMARY' || location.mode === 'REPLICA') &&
    typeof location.worker === 'object' &&
    typeof location.storage === 'object'
  );
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
