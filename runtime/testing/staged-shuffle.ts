import assert from 'node:assert/strict';
import type { PartitionLocation } from '../../core/domain/index.ts';
import { DEFAULT_WAIT_MS } from '../cluster/server-process.ts';
import type { MapResult, MapWriter } from '../client/shuffle-client.ts';
import { pollUntil } from './poll.ts';
import { readAndVerify, recordsOf, winnersOf, type ClientSide, type SmallJob } from './small-job.ts';

/**
 * One stage of a job in flight across an operator's action (a decommission, a rolling upgrade): a shuffle whose maps
 * write half their records (`begin`, which waits until every map had a push acknowledged: data is on the workers),
 * then the rest and close (`end`), then are read back and verified record by record (`verify`).
 */
export class StagedShuffle {
  private readonly writers: MapWriter[];
  private winners: Map<number, number> | undefined;

  constructor(
    readonly client: ClientSide,
    readonly shuffleId: number,
    readonly job: SmallJob,
  ) {
    const shuffle = client.executor.shuffle(shuffleId, { maps: job.maps, partitions: job.partitions });
    this.writers = Array.from({ length: job.maps }, (_, mapId) => shuffle.writer(mapId, 0));
  }

  private write(from: number, to: number): void {
    this.writers.forEach((writer, mapId) =>
      recordsOf(this.job, mapId, 0).forEach((records, p) =>
        records.slice(from, to).forEach((r) => writer.write(p, r)),
      ),
    );
  }

  async begin(): Promise<this> {
    this.write(0, this.job.recordsPerPartition / 2);
    await pollUntil(
      () => this.writers.every((w) => w.acknowledgedBytes() > 0),
      () => `a push of every map of shuffle ${this.shuffleId} acknowledged`,
      { timeoutMs: DEFAULT_WAIT_MS },
    );
    return this;
  }

  /** Writes the second half and closes every map: the stage ends and the lifecycle manager commits it. */
  async end(): Promise<void> {
    this.write(this.job.recordsPerPartition / 2, this.job.recordsPerPartition);
    const results = new Map<string, MapResult>();
    for (const [mapId, writer] of this.writers.entries()) results.set(`${mapId}/0`, await writer.close());
    this.winners = winnersOf(results);
  }

  async verify(): Promise<void> {
    assert.ok(this.winners, `shuffle ${this.shuffleId} ended`);
    await readAndVerify(this.client.executor, this.shuffleId, this.job, this.winners);
  }

  async endAndVerify(): Promise<void> {
    await this.end();
    await this.verify();
  }

  /** The copies the application's lifecycle manager reserved for the shuffle (where its data lives). */
  reserved(): readonly PartitionLocation[] {
    const shuffle = this.client.app.state().shuffles.get(this.shuffleId);
    assert.ok(shuffle, `the lifecycle manager knows shuffle ${this.shuffleId}`);
    return shuffle.reserved;
  }
}
