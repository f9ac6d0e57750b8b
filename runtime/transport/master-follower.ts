// Carries the following of a group of masters (core/ha/leader-following.ts) for a process that talks to the master
// (a worker, a lifecycle manager): the master's node id resolves to the member the core names, a NotLeader answer
// or a failed send is handed to the core, and its resends and failures are carried out here. The machine sees one
// master that answers, or a failed send, as with a single master that restarts.
import { LeaderFollowing, type FollowOutcome } from '../../core/ha/leader-following.ts';
import type { Envelope, NodeId } from '../../core/machines/effects.ts';
import type { Logger } from '../log.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { addressText, type Address, type AddressBook } from './addresses.ts';

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
  private readonly following: LeaderFollowing<WireEnvelope>;
  private readonly byText = new Map<string, Address>();

  constructor(private readonly options: MasterFollowerOptions) {
    for (const member of options.members) this.byText.set(addressText(member), member);
    this.following = new LeaderFollowing({
      masterId: options.masterId,
      members: options.members.map(addressText),
      moved: (line) => {
        this.point();
        options.logger.info({ event: line.event, from: line.from, to: line.to, why: line.why }, line.message);
      },
    });
    this.point();
  }

  /** The member the process asks now (`host:port`). */
  get current(): string {
    return this.following.current;
  }

  send(envelope: WireEnvelope): void {
    this.following.send(envelope);
    this.options.send(envelope);
  }

  /** An envelope arrived: true when it was the master's NotLeader, carried out here and not delivered. */
  received(envelope: Envelope): boolean {
    return this.carry(this.following.received(envelope));
  }

  /**
   * A send failed (the transport reports the connection's failure, then each envelope it held): true when it was a
   * request to the master sent on to the next member, not failed at its sender.
   */
  sendFailed(envelope: WireEnvelope): boolean {
    return this.carry(this.following.sendFailed(envelope));
  }

  /** No connection could be opened to `peer` (`host:port`). */
  unreachable(peer: string): void {
    this.following.unreachable(peer);
  }

  private carry(outcome: FollowOutcome<WireEnvelope>): boolean {
    switch (outcome.kind) {
      case 'pass':
        return false;
      case 'resend':
        this.options.send(outcome.envelope);
        return true;
      case 'fail':
        this.options.failed(outcome.envelope);
        return true;
      case 'consumed':
        return true;
    }
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

function parseHostPort(text: string): Address {
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(text.slice(colon + 1)) };
}
