import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Effect, Envelope, FileRef } from '../../core/machines/effects.ts';
import type { PushMergedData } from '../../core/protocol/messages.ts';
import { ReceiveBodies } from '../wire/index.ts';
import { PushBodyHolds } from './push-body-holds.ts';

const MiB = 1024 * 1024;
const DISK: FileRef = { id: 'app-1/p0-0-0', tier: 'SSD', mountPoint: '/d1' };
const MEMORY: FileRef = { id: 'app-1/p1-0-0', tier: 'MEMORY', mountPoint: '' };

/** A merged push of `batches` payloads cut from `body`, as the codec hands them out (views of the frame). */
function push(body: Uint8Array, batches: number, requestId?: number): Envelope<PushMergedData> {
  const size = 1000;
  return {
    from: 'task-1',
    to: 'worker-1',
    fromRelease: '0.6.0',
    ...(requestId === undefined ? {} : { requestId }),
    message: {
      type: 'PushMergedData',
      shuffleKey: 'app-1',
      mode: 'PRIMARY',
      mapId: 0,
      attemptId: 0,
      batches: Array.from({ length: batches }, (_, i) => ({
        partitionId: i,
        epoch: 0,
        batchId: i,
        payload: body.subarray(100 + i * size, 100 + (i + 1) * size),
      })),
    },
  };
}

/** A body lent by the pool, as a connection hands it out: lent with the connection's hold. */
function received(bodies: ReceiveBodies): Uint8Array {
  return bodies.take(2 * MiB);
}

/** Whether the pool lends `body`'s memory again now: the only way a holder could be read over. */
function lentAgain(bodies: ReceiveBodies, body: Uint8Array): boolean {
  const next = bodies.take(2 * MiB);
  const same = next.buffer === body.buffer;
  bodies.claim(next);
  if (!same) bodies.release(next); // keep the pool as it was (the probe's body goes back, or is dropped)
  return same;
}

describe('PushBodyHolds', () => {
  it('gives a pushed body back only after the connection, the answer, each write and each forward let go, in any order', () => {
    const events = ['delivered', 'answered', 'diskWritten', 'memoryWritten', 'forwardWritten'] as const;
    fc.assert(
      fc.property(fc.shuffledSubarray([...events], { minLength: events.length }), (order) => {
        const bodies = new ReceiveBodies();
        const holds = new PushBodyHolds(bodies, true);
        const body = received(bodies);
        const envelope = push(body, 3, 7);
        holds.received(envelope);
        // The machine's step: a disk write (a run of two batches), a memory write, a forward to the replica.
        const batches = envelope.message.batches;
        const disk: Effect = {
          kind: 'write',
          op: 1,
          file: DISK,
          bytes: batches[0]!.payload,
          more: [batches[1]!.payload],
        };
        const memory: Effect = {
          kind: 'ioBatch',
          ops: [{ kind: 'write', op: 2, file: MEMORY, bytes: batches[2]!.payload }],
        };
        const diskDone = holds.writing(disk);
        const memoryDone = holds.writing(memory);
        const forward = {
          from: 'worker-1',
          to: 'worker-2',
          requestId: 11,
          message: { ...envelope.message, mode: 'REPLICA' as const },
        };
        holds.sending(forward);
        const done: Record<(typeof events)[number], () => void> = {
          delivered: () => bodies.release(body),
          answered: () =>
            holds.sending({
              from: 'worker-1',
              to: 'task-1',
              inReplyTo: 7,
              message: { type: 'PushMergedDataResponse', statuses: [], message: '' },
            }),
          diskWritten: () => diskDone!(),
          memoryWritten: () => memoryDone!(),
          forwardWritten: () =>
            holds.written([new Uint8Array(10), ...forward.message.batches.map((b) => b.payload)]),
        };
        for (const [index, event] of order.entries()) {
          done[event]();
          const last = index === order.length - 1;
          assert.equal(bodies.isLent(body), !last, `after ${order.slice(0, index + 1).join(', ')}`);
        }
        assert.equal(lentAgain(bodies, body), true, 'the body is reused once every holder let go');
      }),
      { numRuns: 200 },
    );
  });

  it('never reuses a body whose push has no request id, or shares one with another push', () => {
    const bodies = new ReceiveBodies();
    const holds = new PushBodyHolds(bodies, true);
    const unanswerable = received(bodies);
    holds.received(push(unanswerable, 2));
    bodies.release(unanswerable);
    assert.equal(lentAgain(bodies, unanswerable), false);

    const first = received(bodies);
    const second = received(bodies);
    holds.received(push(first, 2, 5));
    holds.received(push(second, 2, 5));
    bodies.release(first);
    bodies.release(second);
    holds.sending({
      from: 'worker-1',
      to: 'task-1',
      inReplyTo: 5,
      message: { type: 'PushMergedDataResponse', statuses: [], message: '' },
    });
    assert.equal(lentAgain(bodies, first) || lentAgain(bodies, second), false);
  });

  it('never reuses a body written to a memory tier that keeps the buffers it is given', () => {
    const bodies = new ReceiveBodies();
    const holds = new PushBodyHolds(bodies, false);
    const body = received(bodies);
    const envelope = push(body, 1, 3);
    holds.received(envelope);
    const done = holds.writing({
      kind: 'write',
      op: 1,
      file: MEMORY,
      bytes: envelope.message.batches[0]!.payload,
    });
    assert.equal(done, undefined);
    bodies.release(body);
    holds.sending({
      from: 'worker-1',
      to: 'task-1',
      inReplyTo: 3,
      message: { type: 'PushMergedDataResponse', statuses: [], message: '' },
    });
    assert.equal(lentAgain(bodies, body), false);
  });

  it('leaves bodies it did not lend alone', () => {
    const bodies = new ReceiveBodies();
    const holds = new PushBodyHolds(bodies, true);
    const slab = new Uint8Array(256 * 1024);
    holds.received(push(slab, 2, 1));
    assert.equal(holds.unanswered, 0);
    assert.equal(holds.writing({ kind: 'write', op: 1, file: DISK, bytes: slab.subarray(0, 10) }), undefined);
  });
});
