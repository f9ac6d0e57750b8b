import { chunkRecords, type ReduceTaskState } from '../client/reduce-task.ts';
import type { InMemoryCluster, NodeHandle } from './in-memory-cluster.ts';

/**
 * The application's side of reduce tasks in an InMemoryCluster: takes every chunk a task hands out, keeps its records
 * (copies: a chunk's views die with it) and answers `consumed`, so that tests read whole partitions through the
 * streaming reader. Test-only, like the cluster.
 */
export class ReduceConsumer {
  private readonly taken = new Map<string, number>();
  private readonly records = new Map<string, Uint8Array[]>();

  constructor(private readonly cluster: InMemoryCluster) {}

  /** Takes what the reducers handed out since the last call; true when it took anything. */
  poll(reducers: readonly NodeHandle<ReduceTaskState>[]): boolean {
    let took = false;
    for (const reducer of reducers) {
      const state = reducer.state();
      const after = this.taken.get(reducer.id) ?? -1;
      const fresh = state.ready.filter((chunk) => chunk.seq > after);
      if (fresh.length === 0) continue;
      const kept = this.records.get(reducer.id) ?? [];
      for (const record of chunkRecords(fresh)) kept.push(record.slice());
      this.records.set(reducer.id, kept);
      const last = fresh[fresh.length - 1]!.seq;
      this.taken.set(reducer.id, last);
      this.cluster.consumed(reducer.id, last);
      took = true;
    }
    return took;
  }

  /** Runs the cluster, consuming as the reducers hand chunks out, until every reducer is done or failed. */
  runToEnd(reducers: readonly NodeHandle<ReduceTaskState>[], maxTime: number): boolean {
    for (;;) {
      const result = this.cluster.run({
        until: () => reducers.every((r) => settled(r.state())) || this.hasFresh(reducers),
        maxTime,
      });
      if (!this.poll(reducers) && result.end !== 'condition') return false;
      if (reducers.every((r) => settled(r.state()))) return true;
    }
  }

  /** What a reducer's consumer got, in order. */
  recordsOf(id: string): readonly Uint8Array[] {
    return this.records.get(id) ?? [];
  }

  private hasFresh(reducers: readonly NodeHandle<ReduceTaskState>[]): boolean {
    return reducers.some((r) => {
      const ready = r.state().ready;
      return ready.length > 0 && ready[ready.length - 1]!.seq > (this.taken.get(r.id) ?? -1);
    });
  }
}

function settled(state: ReduceTaskState): boolean {
  return state.phase === 'done' || state.phase === 'failed';
}
