/**
 * Messages exchanged between masters, workers, lifecycle managers and shuffle clients. Every message has a `type`
 * tag; drivers route envelopes without looking inside. The full union is defined by the state machines' protocol
 * (see docs/protocol.md); drivers only rely on MessageBase.
 */
export interface MessageBase {
  readonly type: string;
}

export type Message = MessageBase;
