import { chunkRecords, chunksAhead, type ReduceTaskState } from '../../core/machines/client/reduce-task.ts';
import type { NodeId } from '../../core/machines/effects.ts';
import type { World } from '../world/world.ts';

/**
 * The application's side of streaming reduce tasks in the simulator: after each step of a reducer, takes the chunks
 * it handed out, keeps their records (for the exactly-once check at the end), and answers `consumed` after
 * `consumeMs` of simulated time per chunk, as a reducer computing over what it reads would. A consumed input is
 * delivered only to the process that handed the chunk out: a retried reducer starts reading afresh.
 */
export class ReduceReading {
  private readonly reads = new Map<
    NodeId,
    { taken: number; records: Uint8Array[]; since: number | undefined }
  >();

  /** A reducer (re)starts: what an earlier process of it read is gone with it. */
  begin(node: NodeId): void {
    this.reads.delete(node);
  }

  /**
   * Consumes what the reducer handed out since its last step. Returns a violation's detail when the reducer holds
   * more chunks ahead than its budget.
   */
  afterStep(world: World, node: NodeId, state: ReduceTaskState, consumeMs: number): string | undefined {
    const ahead = chunksAhead(state);
    if (ahead > Math.max(1, state.config.maxChunksAhead)) {
      return `reducer ${node} holds ${ahead} chunks ahead of its consumer, more than svc.client.fetch.maxReqsInFlight=${state.config.maxChunksAhead}`;
    }
    let read = this.reads.get(node);
    if (read === undefined) {
      read = { taken: -1, records: [], since: world.upSince(node) };
      this.reads.set(node, read);
    }
    const fresh = state.ready.filter((chunk) => chunk.seq > read.taken);
    if (fresh.length === 0) return undefined;
    for (const record of chunkRecords(fresh)) read.records.push(record);
    const last = fresh[fresh.length - 1]!.seq;
    read.taken = last;
    const since = read.since;
    world.schedule(world.now + consumeMs * fresh.length, `engine: ${node} consumed chunk ${last}`, (w) => {
      if (w.hasNode(node) && w.isUp(node) && w.upSince(node) === since)
        w.inject(node, { kind: 'consumed', chunk: last });
    });
    return undefined;
  }

  /** The records the reducer's consumer got, in order. */
  recordsOf(node: NodeId): readonly Uint8Array[] {
    return this.reads.get(node)?.records ?? [];
  }
}
