import type { BatchableIo, Effect } from '../effects.ts';

/**
 * One `ioBatch` per step. A worker step often issues many I/O operations at once (a merged push writes one batch to
 * each of many files, a reserve creates many files, a completed batch of writes starts the next writes); handed to
 * the disks as one batch, their completions come back as one `ioBatchDone` input, so the machine takes one step per
 * disk round trip of a step rather than one per operation. The price is that every operation of the batch is
 * reported when the slowest one completed.
 *
 * The batch takes the place of the step's first I/O operation; every other effect keeps its order. Moving an
 * operation ahead of a `deleteFile` of the same file would change what it does (a create after a delete would find
 * the old file), so a step where that would happen is left as it is.
 */
export function groupIo(effects: Effect[]): Effect[] {
  let first = -1;
  let operations = 0;
  for (let i = 0; i < effects.length; i += 1) {
    if (!isBatchable(effects[i]!)) continue;
    if (first < 0) first = i;
    operations += 1;
  }
  if (operations < 2 || overtakesDelete(effects, first)) return effects;
  const ops: BatchableIo[] = [];
  const grouped: Effect[] = [];
  for (const effect of effects) {
    if (!isBatchable(effect)) grouped.push(effect);
    else if (ops.push(effect) === 1) grouped.push({ kind: 'ioBatch', ops });
  }
  return grouped;
}

export function isBatchable(effect: Effect): effect is BatchableIo {
  const kind = effect.kind;
  return (
    kind === 'createFile' || kind === 'write' || kind === 'flush' || kind === 'read' || kind === 'moveFile'
  );
}

/** Whether an I/O operation after `first` touches a file that a deleteFile before it (and after `first`) removes. */
function overtakesDelete(effects: readonly Effect[], first: number): boolean {
  let deleted: Set<string> | undefined;
  for (let i = first + 1; i < effects.length; i += 1) {
    const effect = effects[i]!;
    if (effect.kind === 'deleteFile') (deleted ??= new Set()).add(effect.file.id);
    else if (deleted !== undefined && isBatchable(effect)) {
      if (deleted.has(effect.file.id) || (effect.kind === 'moveFile' && deleted.has(effect.to.id)))
        return true;
    }
  }
  return false;
}
