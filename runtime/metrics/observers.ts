import { performance } from 'node:perf_hooks';
import type { PartitionMode } from '../../core/domain/index.ts';
import {
  lengthOfWrite,
  type BatchableIo,
  type Envelope,
  type IoCompletion,
} from '../../core/machines/effects.ts';
import type { MetricEffect, WorkerObservations } from './registry.ts';

/**
 * Adapters from what a worker's driver sees (envelopes in and out, I/O operations and their completions) to the
 * worker's observations, so that the process wires two hooks instead of one call per metric. They measure and
 * count; they decide nothing.
 */

/** An envelope as the driver receives or sends it (its release does not matter here). */
export type ObservedEnvelope = Omit<Envelope, 'fromRelease'>;

export interface EnvelopeObserver {
  /** Every envelope the worker machine is given (a plain function: pass it as a callback). */
  readonly received: (envelope: ObservedEnvelope) => void;
  /** Every envelope the worker machine sends. */
  readonly sent: (envelope: ObservedEnvelope) => void;
  /** Pushes received and not answered yet (bounded by `limit`). */
  readonly pending: number;
}

/**
 * Push bytes (PrimaryPushDataSize, ReplicaPushDataSize) from every PushData and PushMergedData received, and push
 * times (PrimaryPushDataTime, ReplicaPushDataTime) from each one's arrival to the PushDataResponse or
 * PushMergedDataResponse that answers it (the reply's `inReplyTo` and destination). A push never answered (its
 * connection broke) is forgotten once `limit` newer pushes wait.
 */
export function envelopeObserver(
  metrics: Pick<WorkerObservations, 'observePush' | 'observePushAnswered'>,
  now: () => number = () => performance.now(),
  limit = 65_536,
): EnvelopeObserver {
  const waiting = new Map<string, { readonly mode: PartitionMode; readonly at: number }>();
  return {
    received: (envelope) => {
      const { message } = envelope;
      let bytes: number;
      if (message.type === 'PushData') bytes = message.payload.length;
      else if (message.type === 'PushMergedData')
        bytes = message.batches.reduce((sum, batch) => sum + batch.payload.length, 0);
      else return;
      metrics.observePush(message.mode, bytes);
      if (envelope.requestId === undefined) return;
      waiting.set(`${envelope.from}\n${envelope.requestId}`, { mode: message.mode, at: now() });
      if (waiting.size > limit) waiting.delete(waiting.keys().next().value!);
    },
    sent: (envelope) => {
      const type = envelope.message.type;
      if (type !== 'PushDataResponse' && type !== 'PushMergedDataResponse') return;
      if (envelope.inReplyTo === undefined) return;
      const key = `${envelope.to}\n${envelope.inReplyTo}`;
      const push = waiting.get(key);
      if (push === undefined) return;
      waiting.delete(key);
      metrics.observePushAnswered(push.mode, now() - push.at);
    },
    get pending() {
      return waiting.size;
    },
  };
}

/**
 * One completed I/O operation of the worker, timed by the driver: a successful write or flush moves FlushDataTime and
 * the tier's flush counters, a successful read (a chunk for a reader) FetchChunkTime and the fetch bytes. Failures
 * and the other operations are counted by the machine, not here.
 */
export function ioObserver(
  metrics: Pick<WorkerObservations, 'observeFileIo' | 'observeFetchChunk'>,
): (op: BatchableIo, completion: IoCompletion, elapsedMs: number) => void {
  return (op, completion, elapsedMs) => {
    if (completion.kind !== 'ioDone') return;
    switch (op.kind) {
      case 'write':
        metrics.observeFileIo(op.file.tier, lengthOfWrite(op), elapsedMs);
        return;
      case 'flush':
        metrics.observeFileIo(op.file.tier, 0, elapsedMs);
        return;
      case 'read':
        metrics.observeFetchChunk(completion.bytes?.length ?? op.length, elapsedMs);
        return;
      case 'createFile':
      case 'moveFile':
        return;
    }
  };
}

/**
 * PartialFrameGivenUpCount, by cause: each connection a process closed to give back what its partly received frame
 * held (runtime/transport/receive-memory.ts, `gaveUp`).
 */
export function partialFrameGivenUp(
  metrics: { readonly onMetric: (effect: MetricEffect) => void } | undefined,
): (cause: string) => void {
  return (cause) =>
    metrics?.onMetric({
      kind: 'metric',
      name: 'PartialFrameGivenUpCount',
      op: 'inc',
      value: 1,
      labels: { cause },
    });
}
