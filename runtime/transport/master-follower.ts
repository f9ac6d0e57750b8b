// Carries the core's decisions about a group of masters (core/ha/follow-leader.ts) for a process that talks to the
// master (a worker, a lifecycle manager): the master's node id resolves to the member the core names; a NotLeader
// answer moves it to the named leader and sends the request on there, once per member at most; a member no
// connection reaches moves it to the next member. The machine sees one master that answers, or a failed send, as
// with a single master that restarts.
import {
  currentMaster,
  followMaster,
  masterCursor,
  resendAfterNotLeader,
  resendAfterUnreachable,
  type MasterAnswer,
  type MasterCursor,
} from '../../core/ha/follow-leader.ts';
import type { Envelope, NodeId } from '../../core/machines/effects.ts';
import type { Logger } from '../log.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { addressText, type Address, type AddressBook } from './addresses.ts';

/** Requests to the master remembered for a resend; the oldest is forgotten past this (its sender times it out). */
const MAX_REMEMBERED_REQUESTS = 4_096;

export interface MasterFollowerOptions {
  readonly masterId: NodeId;
  readonly members: readonly Address[];
  readonly addresses: AddressBook;
  readonly logger: Logger;
  readonly send: (envelope: WireEnvelope) => void;
  /** A request that will not be sent on: its sender learns as of a failed send. */
  readonly failed: (envelope: WireEnvelope) => void;
}

export class MasterFollower {
  private cursor: MasterCursor;
  private readonly byText = new Map<string, Address>();
  private readonly requests = new Map<string, { envelope: WireEnvelope; resent: number; sentTo: string }>();

  constructor(private readonly options: MasterFollowerOptions) {
    for (const member of options.members) this.byText.set(addressText(member), member);
    this.cursor = masterCursor(options.members.map(addressText));
    this.point();
  }

  /** The member the process asks now (`host:port`). */
  get current(): string {
    return currentMaster(this.cursor);
  }

  send(envelope: WireEnvelope, resent = 0): void {
    if (envelope.to === this.options.masterId && envelope.requestId !== undefined) {
      const key = requestKey(envelope.from, envelope.requestId);
      this.requests.delete(key);
      this.requests.set(key, { envelope, resent, sentTo: this.current });
      if (this.requests.size > MAX_REMEMBERED_REQUESTS) {
        this.requests.delete(this.requests.keys().next().value!);
      }
    }
    this.options.send(envelope);
  }

  /** An envelope arrived: true when it was the master's NotLeader, carried out here and not delivered. */
  received(envelope: Envelope): boolean {
    if (envelope.from !== this.options.masterId || envelope.inReplyTo === undefined) return false;
    const key = requestKey(envelope.to, envelope.inReplyTo);
    const request = this.requests.get(key);
    this.requests.delete(key);
    if (envelope.message.type !== 'NotLeader') return false;
    const leader = envelope.message.leader === '' ? null : envelope.message.leader;
    const from = this.current;
    this.follow({ kind: 'notLeader', from, leader });
    if (request === undefined) return true;
    if (resendAfterNotLeader(this.cursor, { leader }, request.resent)) {
      this.send(request.envelope, request.resent + 1);
    } else {
      this.options.failed(request.envelope);
    }
    return true;
  }

  /**
   * A send failed (the transport reports the connection's failure first, then each envelope it held): true when it
   * was a request to the master that went on to the member the cursor moved to, and is not failed at its sender.
   */
  sendFailed(envelope: WireEnvelope): boolean {
    if (envelope.to !== this.options.masterId || envelope.requestId === undefined) return false;
    const key = requestKey(envelope.from, envelope.requestId);
    const request = this.requests.get(key);
    if (request === undefined || !resendAfterUnreachable(this.cursor, request.sentTo, request.resent)) {
      this.requests.delete(key);
      return false;
    }
    this.send(request.envelope, request.resent + 1);
    return true;
  }

  /** No connection could be opened to `peer` (`host:port`). */
  unreachable(peer: string): void {
    if (this.byText.has(peer) || peer === this.current) this.follow({ kind: 'unreachable', member: peer });
  }

  private follow(answer: MasterAnswer): void {
    const before = this.current;
    this.cursor = followMaster(this.cursor, answer);
    if (this.current === before) return;
    this.point();
    this.options.logger.info(
      { event: 'master.follow', from: before, to: this.current, why: answer.kind },
      answer.kind === 'notLeader'
        ? `master ${before} does not lead: asking ${this.current}`
        : `master ${before} is unreachable: asking ${this.current}`,
    );
  }

  private point(): void {
    const text = this.current;
    let address = this.byText.get(text);
    if (address === undefined) {
      address = parseHostPort(text);
      this.byText.set(text, address);
    }
    this.options.addresses.set(this.options.masterId, address);
  }
}

function requestKey(from: NodeId, requestId: number): string {
  return `${from}#${requestId}`;
}

function parseHostPort(text: string): Address {
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(text.slice(colon + 1)) };
}
