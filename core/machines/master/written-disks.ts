import type { DiskInfo } from '../../domain/index.ts';
import { diskBudget } from '../../slots/index.ts';

/**
 * Whether a worker's stored entry must be written again for the disks a heartbeat reported. A heartbeat alone is
 * not written, yet it makes the bookings naming the worker obsolete (./bookings.ts), so a master restored after
 * that offers from the disks the entry was last written with: those must give each disk the budget its latest
 * heartbeat gives, or a restarted master (or the next leader) would offer room that is gone (swarm seed 123931: a
 * disk at its registration's 65,726 bytes, 64,726 reported since, offered a slot of 65,536 after a restart).
 *
 * True when nothing was written since this master started (`written` undefined), when the disks are not the same
 * mount points in the same order, or when a disk's status or budget (its usable bytes, or its shared filesystem's,
 * over the estimate) differs; false when only numbers within one budget moved, so a busy worker is written about
 * once per estimate's worth of bytes per disk, not at every heartbeat.
 */
export function disksNeedWriting(
  written: readonly DiskInfo[] | undefined,
  reported: readonly DiskInfo[],
  estimate: number,
): boolean {
  if (written === undefined || written.length !== reported.length) return true;
  // A disk without a shared filesystem has no shared budget: -1, which no budget equals.
  const shared = (bytes: number | undefined) => (bytes === undefined ? -1 : diskBudget(bytes, estimate));
  for (let i = 0; i < reported.length; i += 1) {
    const was = written[i]!;
    const is = reported[i]!;
    if (was.mountPoint !== is.mountPoint || was.status !== is.status) return true;
    if (diskBudget(was.usableBytes, estimate) !== diskBudget(is.usableBytes, estimate)) return true;
    if (shared(was.filesystemUsableBytes) !== shared(is.filesystemUsableBytes)) return true;
  }
  return false;
}
