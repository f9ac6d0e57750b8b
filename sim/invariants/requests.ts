import type { Effect, NodeId } from '../../core/machines/effects.ts';
import type { Message, MessageOf, MessageType } from '../../core/protocol/messages.ts';

/**
 * Remembers the requests nodes send, so that a checker seeing a response (which names its request only by
 * `inReplyTo`) can tell what was asked. Only the message types a checker registers are kept.
 */
export class RequestLog {
  private readonly requests = new Map<string, { readonly to: NodeId; readonly message: Message }>();

  constructor(private readonly types: ReadonlySet<MessageType>) {}

  /** The message types kept, for an observer's `effects` subscription. */
  get kept(): readonly MessageType[] {
    return [...this.types];
  }

  /** Call from onEffect: records the effect if it is a request of a kept type. */
  record(from: NodeId, effect: Effect): void {
    if (effect.kind === 'send' && effect.requestId !== undefined && this.types.has(effect.message.type)) {
      this.requests.set(`${from}#${effect.requestId}`, { to: effect.to, message: effect.message });
    }
  }

  /** The request `requester` sent with `requestId`, if it was of type `type`. */
  find<T extends MessageType>(
    requester: NodeId,
    requestId: number | undefined,
    type: T,
  ): MessageOf<T> | undefined {
    if (requestId === undefined) return undefined;
    const entry = this.requests.get(`${requester}#${requestId}`);
    return entry?.message.type === type ? (entry.message as MessageOf<T>) : undefined;
  }
}
