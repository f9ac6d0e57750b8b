import { chunksOfWrite, type BatchableIo, type Effect, type Envelope } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { lentBodiesOf, type ReceiveBodies, type WireEnvelope } from '../wire/index.ts';

/**
 * Which holders a pushed body reaches on a worker, so that the pool (runtime/wire/receive-bodies.ts) lends it again
 * only once none of them can read it. A PushData or PushMergedData's payloads are views of the frame's body; the
 * worker's machine keeps them in its files' write queues until written, hands them to the disks in `write` effects
 * (and `ioBatch`es of them), and to a replica in a forward (`send`). So the body is held:
 *
 * - by the machine, from the receive until the push is answered (a reply to its request): every batch of a push is
 *   settled only once its write completed or its file, queue and all, was dropped, and the machine keeps no payload
 *   anywhere else (core/machines/worker/push.ts, state.ts: the `write` task is the one holder of bytes);
 * - by each `write` effect until the storage completed it: the memory tier copies into its pool, a disk's `writev`
 *   has returned (runtime/storage/tier-storage.ts);
 * - by each `send` carrying its payloads until the transport wrote them to the socket (its `written` hook releases
 *   the pieces: the worker composes it); a send that is never written (the link closed, the peer is this process)
 *   never releases, and the body is simply not reused.
 *
 * Anything uncertain is an escape, never a guess: a push without a request id (no answer will come), a second push
 * under the same sender and request id, and a write to a memory tier that keeps the written buffers as they are (no
 * memory pool: runtime/storage/memory-files.ts).
 */
export class PushBodyHolds {
  /** Bodies the machine holds, by the push's sender and request id, until it answers. */
  private readonly answering = new Map<string, Uint8Array[]>();

  constructor(
    private readonly bodies: ReceiveBodies,
    /** Whether the memory tier copies what is written to it (it has a pool), rather than keeping the buffers. */
    private readonly memoryTierCopies: boolean,
  ) {}

  /** A push arrived for the machine (called before the machine can see it: the frame's own hold is still on). */
  received(envelope: Envelope): void {
    const views = payloadsOf(envelope.message);
    if (views === undefined) return;
    const found = lentBodiesOf(this.bodies, views);
    if (found.length === 0) return;
    if (envelope.requestId === undefined) {
      for (const body of found) this.bodies.escape(body);
      return;
    }
    const key = answerKey(envelope.from, envelope.requestId);
    const earlier = this.answering.get(key);
    if (earlier !== undefined) {
      // Two pushes under one request id: which answer is whose cannot be told, so neither body is reused.
      for (const body of [...earlier, ...found]) this.bodies.escape(body);
      return;
    }
    for (const body of found) {
      this.bodies.claim(body);
      this.bodies.hold(body);
    }
    this.answering.set(key, found);
  }

  /**
   * The machine sends `envelope`: a reply lets go of the request's body; payloads of a pushed body (a forward) are
   * held until the transport wrote them (`written`).
   */
  sending(envelope: WireEnvelope): void {
    if (envelope.inReplyTo !== undefined) {
      const key = answerKey(envelope.to, envelope.inReplyTo);
      const held = this.answering.get(key);
      if (held !== undefined) {
        this.answering.delete(key);
        for (const body of held) this.bodies.release(body);
      }
    }
    const views = payloadsOf(envelope.message);
    if (views === undefined) return;
    for (const body of lentBodiesOf(this.bodies, views)) this.bodies.hold(body);
  }

  /** The transport wrote a frame's pieces: what `sending` held for them is released. */
  written(pieces: readonly Uint8Array[]): void {
    for (const body of lentBodiesOf(this.bodies, pieces)) this.bodies.release(body);
  }

  /**
   * A `write` or `ioBatch` effect is about to run: its pushed bodies are held; the returned function, called once
   * it completed, releases them (undefined when it holds nothing).
   */
  writing(effect: Extract<Effect, { kind: 'write' | 'ioBatch' }>): (() => void) | undefined {
    const writes = effect.kind === 'write' ? [effect] : effect.ops.filter(isWrite);
    let held: Uint8Array[] | undefined;
    for (const write of writes) {
      const found = lentBodiesOf(this.bodies, chunksOfWrite(write));
      if (found.length === 0) continue;
      if (write.file.tier === 'MEMORY' && !this.memoryTierCopies) {
        for (const body of found) this.bodies.escape(body);
        continue;
      }
      for (const body of found) {
        this.bodies.hold(body);
        (held ??= []).push(body);
      }
    }
    if (held === undefined) return undefined;
    const release = held;
    return () => {
      for (const body of release) this.bodies.release(body);
    };
  }

  /** Pushes received and not answered yet that hold a pooled body. */
  get unanswered(): number {
    return this.answering.size;
  }
}

function isWrite(op: BatchableIo): op is Extract<BatchableIo, { kind: 'write' }> {
  return op.kind === 'write';
}

function answerKey(node: string, requestId: number): string {
  return `${node}\n${requestId}`;
}

/** The payload views of a push (the only messages whose bytes are views of a received body); else undefined. */
function payloadsOf(message: Message): readonly Uint8Array[] | undefined {
  if (message.type === 'PushData') return [message.payload];
  if (message.type === 'PushMergedData') return message.batches.map((batch) => batch.payload);
  return undefined;
}
