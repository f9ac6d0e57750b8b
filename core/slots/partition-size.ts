/**
 * The master's estimate of how large one partition file grows, which turns a disk's usable bytes into a slot budget.
 * Contract section 8: the estimate always lies within [minSize, maxSize].
 */

/** `svc.master.estimatedPartitionSize.{minSize,maxSize,initialSize}` in bytes (reference: 8 MiB, 4 GiB, 64 MiB). */
export interface PartitionSizeBounds {
  readonly minSize: number;
  readonly maxSize: number;
  readonly initialSize: number;
}

/** Bytes written and files committed, summed over application heartbeats since the previous update. */
export interface PartitionSizeObservation {
  readonly bytesWritten: number;
  readonly fileCount: number;
}

function checkBounds(bounds: PartitionSizeBounds): void {
  const { minSize, maxSize, initialSize } = bounds;
  if (!Number.isFinite(minSize) || minSize <= 0) {
    throw new RangeError(
      `svc.master.estimatedPartitionSize.minSize must be a positive number of bytes, got ${minSize}`,
    );
  }
  if (!Number.isFinite(maxSize) || maxSize < minSize) {
    throw new RangeError(
      `svc.master.estimatedPartitionSize.maxSize (${maxSize}) must be at least minSize (${minSize})`,
    );
  }
  if (!Number.isFinite(initialSize) || initialSize <= 0) {
    throw new RangeError(
      `svc.master.estimatedPartitionSize.initialSize must be a positive number of bytes, got ${initialSize}`,
    );
  }
}

function clamp(size: number, bounds: PartitionSizeBounds): number {
  return Math.min(bounds.maxSize, Math.max(bounds.minSize, Math.floor(size)));
}

/** The estimate before anything has been observed: initialSize, itself kept within the bounds. */
export function initialPartitionSize(bounds: PartitionSizeBounds): number {
  checkBounds(bounds);
  return clamp(bounds.initialSize, bounds);
}

/**
 * The next estimate: the average file size observed since the last update, clamped to the bounds. A window in which
 * no file was committed says nothing about partition sizes, so the current estimate is kept (the reference resets
 * to initialSize instead, which makes budgets jump after every quiet period). Invalid observations (negative or
 * non-finite counters) are treated like an empty window for the same reason.
 */
export function updateEstimatedPartitionSize(
  current: number,
  observed: PartitionSizeObservation,
  bounds: PartitionSizeBounds,
): number {
  checkBounds(bounds);
  const { bytesWritten, fileCount } = observed;
  const usable =
    Number.isFinite(bytesWritten) && bytesWritten >= 0 && Number.isFinite(fileCount) && fileCount > 0;
  if (usable) return clamp(bytesWritten / fileCount, bounds);
  return Number.isFinite(current) ? clamp(current, bounds) : clamp(bounds.initialSize, bounds);
}
