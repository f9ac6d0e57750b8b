import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chunksOfWrite, type Effect, type IoCompletion, type IoError } from '../effects.ts';
import type { PartitionFile, WorkerMachineState } from './state.ts';
import {
  CLIENT,
  HDD_MASK_STORAGE,
  ioOps,
  KEY,
  location,
  MAPPER,
  pushData,
  pushMergedData,
  registeredWorker,
  SELF,
  type Harness,
  type IoEffect,
  commitFiles,
  onlySent,
} from './test-kit.ts';

/**
 * The per-file task runner (file-queue.ts) changes a file's stored record in place: one record per file. For
 * generated histories of plain and merged pushes to disk and memory files, commits, and I/O completions that succeed
 * or fail in any order: a file has at most one operation in flight and it is the one its record names (several writes
 * of a disk file go as one operation of several chunks), writes reach the disk in the order they were accepted, a
 * file's length and chunk starts are exactly what its successful writes make them, and each file has one record
 * from its reserve on (a new record per transition outlived the scavenges between a file's transitions).
 */

const PARTITIONS = 4;
const CHUNK_BYTES = 64;

type Action =
  | { kind: 'push'; batches: { partitionId: number; size: number }[] }
  | { kind: 'complete'; index: number; error: IoError | null }
  | { kind: 'commit'; partitionId: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('push'),
      batches: fc.array(
        fc.record({
          partitionId: fc.integer({ min: 0, max: PARTITIONS - 1 }),
          size: fc.integer({ min: 1, max: 50 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('complete'),
      // Mostly the oldest operation, as disks tend to complete them.
      index: fc.oneof(fc.constant(0), fc.nat()),
      error: fc.oneof(
        { weight: 8, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom<IoError>('IO_ERROR', 'NO_SPACE') },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('commit'),
      partitionId: fc.integer({ min: 0, max: PARTITIONS - 1 }),
    }),
  },
);

/** Even partitions may live in memory (and move to disk as they grow or memory fills up); odd ones are on disk. */
function newWorker(): Harness<WorkerMachineState> {
  const worker = registeredWorker(SELF, {
    memory: { capacityBytes: 300, maxFileBytes: 120, evictRatio: 0.6, refuseImplicitMemory: false },
    chunkSizeBytes: CHUNK_BYTES,
    split: { enabled: false, minBytes: 1, maxBytes: 10_000 },
  });
  const primaries = Array.from({ length: PARTITIONS }, (_, id) =>
    location(id, 0, 'PRIMARY', SELF, {
      storage: id % 2 === 0 ? { type: 'HDD', mountPoint: '', availableTypes: 3 } : HDD_MASK_STORAGE,
    }),
  );
  const reserve = worker.receive(
    CLIENT,
    {
      type: 'ReserveSlots',
      appId: 'app',
      shuffleId: 1,
      primaries,
      replicas: [],
      splitThreshold: 10_000,
      splitMode: 'SOFT',
      memoryEnabled: true,
    },
    { requestId: 1 },
  );
  worker.completeIo(reserve);
  return worker;
}

function filesOf(state: WorkerMachineState): PartitionFile[] {
  return [...(state.shuffles.get(KEY)?.files.values() ?? [])];
}

/** The chunk starts the worker's rule gives for these batch lengths, appended in order. */
function expectedChunkStarts(lengths: readonly number[]): number[] {
  const starts = [0];
  let bytes = 0;
  for (const length of lengths) {
    bytes += length;
    if (bytes - starts[starts.length - 1]! >= CHUNK_BYTES) starts.push(bytes);
  }
  return starts;
}

function keyOf(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

/** How often the histories exercised what the property is about (checked after the run, so it cannot be vacuous). */
const seen = { queuedWrites: 0, writes: 0, runs: 0, flushes: 0, moves: 0, failures: 0 };

describe('worker: the per-file task runner', () => {
  it('runs one task per file in order, derives length and chunks from the writes, and keeps one record per file', () => {
    fc.assert(
      fc.property(fc.array(actionArb, { minLength: 5, maxLength: 60 }), (actions) => {
        const worker = newWorker();
        const outstanding: IoEffect[] = [];
        const recordOf = new Map<string, PartitionFile>();
        /** Per file id: the lengths of its successful writes, in order. */
        const written = new Map<string, number[]>();
        /** Per payload: its place in the order the pushes were sent; per file id, the last one written. */
        const pushOrder = new Map<string, number>();
        const lastWritten = new Map<string, number>();
        let nextBatchId = 0;

        const observe = (effects: readonly Effect[]): void => {
          for (const op of ioOps(effects)) {
            if (op.kind === 'write') {
              const chunks = chunksOfWrite(op);
              if (chunks.length > 1) seen.runs += 1;
              for (const chunk of chunks) {
                const order = pushOrder.get(keyOf(chunk));
                assert.ok(order !== undefined, 'a write carries the bytes of pushed batches');
                assert.ok(order > (lastWritten.get(op.file.id) ?? -1), `${op.file.id}: writes in push order`);
                lastWritten.set(op.file.id, order);
              }
            }
            if (op.kind === 'moveFile') seen.moves += 1;
            if (op.kind === 'flush') seen.flushes += 1;
            outstanding.push(op);
          }
          for (const file of filesOf(worker.state)) {
            const first = recordOf.get(file.name) ?? file;
            recordOf.set(file.name, first);
            assert.equal(file, first, `${file.name}: one record, changed in place`);
            const inFlight = outstanding.filter((op) => op.file.id === file.file.id);
            assert.ok(inFlight.length <= 1, `${file.name}: one operation at a time`);
            assert.equal(file.busyOp, inFlight[0]?.op, `${file.name}: busy with the operation in flight`);
            if (file.queue.filter((task) => task.kind === 'write').length > 1) seen.queuedWrites += 1;
          }
        };

        observe([]);
        for (const action of actions) {
          worker.now += 5;
          switch (action.kind) {
            case 'push': {
              const batches = action.batches.map((batch) => ({ ...batch, batchId: nextBatchId++ }));
              const message =
                batches.length === 1
                  ? pushData(KEY, batches[0]!.partitionId, 0, 'PRIMARY', batches[0])
                  : pushMergedData(KEY, 'PRIMARY', batches);
              const payloads =
                message.type === 'PushData' ? [message.payload] : message.batches.map((b) => b.payload);
              for (const payload of payloads) pushOrder.set(keyOf(payload), pushOrder.size);
              observe(worker.receive(MAPPER, message, { requestId: worker.now }));
              break;
            }
            case 'commit':
              observe(
                worker.receive(CLIENT, commitFiles([`${action.partitionId}-0`], [-1]), {
                  requestId: worker.now,
                }),
              );
              break;
            case 'complete': {
              if (outstanding.length === 0) break;
              const [op] = outstanding.splice(action.index % outstanding.length, 1);
              const completion: IoCompletion =
                action.error === null
                  ? { kind: 'ioDone', op: op!.op }
                  : { kind: 'ioFailed', op: op!.op, error: action.error };
              if (action.error !== null) seen.failures += 1;
              else if (op!.kind === 'write') {
                seen.writes += 1;
                const lengths = written.get(op!.file.id) ?? [];
                written.set(op!.file.id, [...lengths, ...chunksOfWrite(op!).map((chunk) => chunk.length)]);
              }
              observe(worker.step(completion));
              break;
            }
          }
        }

        for (const file of filesOf(worker.state)) {
          const lengths = written.get(file.file.id) ?? [];
          assert.equal(
            file.bytes,
            lengths.reduce((sum, length) => sum + length, 0),
            `${file.name}: length`,
          );
          assert.deepEqual(file.chunkStarts, expectedChunkStarts(lengths), `${file.name}: chunk starts`);
        }
      }),
      { numRuns: 200 },
    );
    for (const [what, times] of Object.entries(seen)) assert.ok(times > 0, `the histories never had ${what}`);
  });

  it('writes the batches of a disk file that one push carries as one operation, and answers them together', () => {
    for (const outcome of ['ok', 'IO_ERROR'] as const) {
      const worker = newWorker();
      const batches = [0, 1, 2].map((batchId) => ({ partitionId: 1, batchId, size: 10 }));
      const effects = worker.receive(MAPPER, pushMergedData(KEY, 'PRIMARY', batches), { requestId: 7 });
      const writes = ioOps(effects).filter((op) => op.kind === 'write');
      assert.equal(writes.length, 1, 'one operation for the three batches of partition 1');
      const write = writes[0]!;
      assert.ok(write.kind === 'write', "write.kind === 'write'");
      assert.equal(chunksOfWrite(write).length, 3);
      const answer = onlySent(
        outcome === 'ok' ? worker.ioDone(write.op) : worker.ioFailed(write.op, outcome),
        'PushMergedDataResponse',
      );
      const file = filesOf(worker.state).find((f) => f.location.partitionId === 1)!;
      if (outcome === 'ok') {
        assert.deepEqual(answer.message.statuses, ['SUCCESS', 'SUCCESS', 'SUCCESS']);
        assert.equal(file.bytes, write.bytes.length * 3);
      } else {
        assert.deepEqual(answer.message.statuses, Array(3).fill('PUSH_DATA_WRITE_FAIL_PRIMARY'));
        assert.equal(file.bytes, 0, 'a failed run adds nothing: the acknowledged prefix stays');
        assert.equal(file.status, 'failed');
      }
    }
  });

  it("writes a memory file's batches of one push as one operation, up to the file's size", () => {
    const worker = newWorker();
    // Partition 0 lives in memory, up to 120 bytes: the first two frames fit, the third would take it past them.
    const batches = [1, 1, 40].map((size, batchId) => ({ partitionId: 0, batchId, size }));
    const effects = worker.receive(MAPPER, pushMergedData(KEY, 'PRIMARY', batches), { requestId: 7 });
    const writes = ioOps(effects).filter((op) => op.kind === 'write');
    assert.equal(writes.length, 1);
    const run = writes[0]!;
    assert.ok(run.kind === 'write' && run.file.tier === 'MEMORY', 'a write to the memory file');
    const runBytes = chunksOfWrite(run).reduce((sum, chunk) => sum + chunk.length, 0);
    assert.equal(chunksOfWrite(run).length, 2, 'the first two batches as one operation');
    assert.ok(runBytes <= 120, `${runBytes} bytes within the file's 120`);
    // The third heads an operation of its own, which first moves the file off the memory tier.
    const next = ioOps(worker.ioDone(run.op));
    assert.deepEqual(
      next.map((op) => op.kind),
      ['moveFile'],
    );
  });
});
