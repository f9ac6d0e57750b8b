import type { Compare, LeaseId, StoredKey } from './store.ts';

/**
 * A leader's term: its election key, the revision that created it and the lease it hangs on. While the key
 * exists with that creation revision and lease, no other candidate can lead (a later candidate's key is younger
 * and waits for this one to go), so these two compares on every durable write make the write a leader's: a
 * deposed leader's late write is refused by the store itself, whatever its clock believes.
 */
export interface Fence {
  readonly key: string;
  readonly createRevision: number;
  readonly lease: LeaseId;
}

/** The condition every durable write of a term carries (the runtime and the simulator's model evaluate it). */
export function fenceCompares(fence: Fence): readonly Compare[] {
  return [
    { key: fence.key, target: 'createRevision', equals: fence.createRevision },
    { key: fence.key, target: 'lease', equals: fence.lease },
  ];
}

/** What the leader last read or wrote of a data key: the revision its next write of the key is conditioned on. */
export interface KnownKey {
  readonly value: string;
  readonly modRevision: number;
}

/**
 * Compare-and-swap on a data key: its last write is the one the leader knows (or, for a key the leader believes
 * absent, it does not exist). A write that another writer got in before is refused.
 */
export function casCompare(key: string, known: KnownKey | undefined): Compare {
  return known === undefined
    ? { key, target: 'createRevision', equals: 0 }
    : { key, target: 'modRevision', equals: known.modRevision };
}

/** Whether `compare` holds for the key as stored (undefined: absent). */
export function compareHolds(compare: Compare, stored: StoredKey | undefined): boolean {
  switch (compare.target) {
    case 'createRevision':
      return (stored?.createRevision ?? 0) === compare.equals;
    case 'modRevision':
      return (stored?.modRevision ?? 0) === compare.equals;
    case 'lease':
      return stored?.lease === compare.equals;
  }
}
