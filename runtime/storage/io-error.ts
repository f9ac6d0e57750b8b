import type { IoError } from '../../core/machines/effects.ts';

/** A failure already classified in the core's vocabulary (a disk gone, an unsafe id, a missing file). */
export class IoFailure extends Error {
  constructor(
    readonly code: IoError,
    message: string,
  ) {
    super(message);
    this.name = 'IoFailure';
  }
}

/**
 * The core's name for a failed file-system call. Only the codes the core reacts to differently get a name of their
 * own (a full disk makes the worker stop placing files there; a missing or existing file is a logic answer; a
 * process out of descriptors is no fault of the disk); every other failure is a plain I/O error, which marks the
 * disk as having a problem.
 */
export function ioErrorOf(error: unknown): IoError {
  if (error instanceof IoFailure) return error.code;
  switch (errnoCode(error) ?? '') {
    case 'ENOSPC':
    case 'EDQUOT':
      return 'NO_SPACE';
    case 'ENOENT':
      return 'NOT_FOUND';
    case 'EEXIST':
      return 'EXISTS';
    case 'ETIMEDOUT':
      return 'TIMEOUT';
    case 'EMFILE':
    case 'ENFILE':
      return 'NO_DESCRIPTORS';
    default:
      return 'IO_ERROR';
  }
}

/** The `code` of a Node.js system error (`ENOENT`, …), or undefined for anything else. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}
