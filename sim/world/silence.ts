import type { Envelope, NodeId } from '../../core/machines/effects.ts';
import { SilentPeers, type SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';

/** A request a process asked of a peer and has had no answer to. */
export interface OwedRequest {
  readonly requestId: number;
  readonly message: Envelope['message'];
  /** When it was asked (virtual ms). */
  readonly at: number;
}

/** What the world does for the watch: the network and the failures are the world's. */
export interface SilenceHooks {
  now(): number;
  count(name: string): void;
  /** Sends a ping from `from`'s process to `to`; the world calls `heard(from, to)` if an answer comes back. */
  ping(from: NodeId, to: NodeId): void;
  /** `asker` gave `peer` up as silent: fail each of these requests at `asker` at once. */
  failOwed(asker: NodeId, peer: NodeId, owed: readonly OwedRequest[]): void;
  /**
   * A request was started to a peer its asker had given up on and not heard from since (`silent-peer-shunned`), or
   * refused to a peer its asker had heard from since it gave it up (`silent-peer-heard-again`).
   */
  violation(
    invariant: 'silent-peer-shunned' | 'silent-peer-heard-again',
    asker: NodeId,
    peer: NodeId,
    detail: string,
  ): void;
  /** Runs `check` at virtual time `at`. */
  schedule(at: number, label: string, check: () => void): void;
}

/**
 * Each process's watch on the peers it waits for (core/interpreter/silent-peers.ts), as the runtime's transport
 * keeps one per process: the world's network loses a partitioned peer's messages without a word, as a cut link
 * does, and this is how a process learns of it before its requests' own deadlines.
 *
 * The watch also keeps the world's own record of which peers each process gave up on, apart from the core's
 * SilentPeers, so that a bug there is caught, not trusted: a peer asked again before it was heard from, or one still
 * refused after it was (a worker back from a partition must be usable for new work).
 */
export class SilenceWatch {
  private readonly peers = new Map<NodeId, SilentPeers<NodeId>>();
  private readonly owes = new Map<NodeId, Map<NodeId, Map<number, OwedRequest>>>();
  /** `asker>peer` for each peer an asker gave up on, until it is heard from again. */
  private readonly shunned = new Set<string>();
  private checkScheduled = false;

  constructor(
    readonly settings: SilentPeerSettings,
    private readonly hooks: SilenceHooks,
    private readonly plantedBug: PlantedBug | undefined,
  ) {}

  /** A process of `node` started: it knows no peer yet. */
  started(node: NodeId): void {
    this.peers.set(
      node,
      new SilentPeers(this.settings, this.plantedBug === undefined ? {} : { plantedBug: this.plantedBug }),
    );
    this.owes.set(node, new Map());
    for (const key of this.shunned) if (key.startsWith(`${node}>`)) this.shunned.delete(key);
  }

  /** `node`'s process ended: its watch goes with it. */
  stopped(node: NodeId): void {
    this.peers.delete(node);
    this.owes.delete(node);
    for (const key of this.shunned) if (key.startsWith(`${node}>`)) this.shunned.delete(key);
  }

  /** Whether `from` may start a request to `to` (false while it is silent to `from`). */
  mayAsk(from: NodeId, to: NodeId): boolean {
    const may = this.peers.get(from)?.mayAsk(to) ?? true;
    if (!may && !this.shunned.has(`${from}>${to}`)) {
      this.hooks.violation(
        'silent-peer-heard-again',
        from,
        to,
        `${from} refused a request to ${to} as silent although it heard from ${to} after giving it up`,
      );
    }
    return may;
  }

  /** A request left `from` for `to` on the network. */
  asked(from: NodeId, to: NodeId, requestId: number, message: Envelope['message']): void {
    if (this.shunned.has(`${from}>${to}`)) {
      this.hooks.violation(
        'silent-peer-shunned',
        from,
        to,
        `${from} asked ${to} (${message.type} #${requestId}) after giving it up as silent and before hearing from it`,
      );
    }
    const owes = this.owes.get(from);
    if (owes === undefined) return;
    let owed = owes.get(to);
    if (owed === undefined) {
      owed = new Map();
      owes.set(to, owed);
    }
    owed.set(requestId, { requestId, message, at: this.hooks.now() });
    this.scheduleCheck();
  }

  /** `node`'s request `requestId` to `peer` was answered or failed: it owes nothing for it any more. */
  settled(node: NodeId, peer: NodeId, requestId: number): void {
    const owed = this.owes.get(node)?.get(peer);
    if (owed === undefined) return;
    owed.delete(requestId);
    if (owed.size === 0) this.owes.get(node)!.delete(peer);
  }

  /** Something from `peer` reached `node` (a message, a ping's answer, a refused connection's reset). */
  heard(node: NodeId, peer: NodeId): void {
    // The world's record ends the silence whatever the core's answer: the check above judges the core by it.
    this.shunned.delete(`${node}>${peer}`);
    if (this.peers.get(node)?.heard(peer, this.hooks.now()) === true)
      this.hooks.count('transport.silentPeerHeard');
  }

  private scheduleCheck(): void {
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    this.hooks.schedule(this.hooks.now() + this.settings.pingAfterMs / 2, 'silent-peer check', () =>
      this.check(),
    );
  }

  private check(): void {
    this.checkScheduled = false;
    const now = this.hooks.now();
    let watching = false;
    for (const [node, silent] of this.peers) {
      const owes = this.owes.get(node)!;
      const owing: [NodeId, number][] = [];
      for (const [peer, owed] of owes) {
        let oldest = Infinity;
        for (const request of owed.values()) oldest = Math.min(oldest, request.at);
        owing.push([peer, oldest]);
      }
      for (const action of silent.check(now, owing)) {
        switch (action.kind) {
          case 'ping':
          case 'probe':
            this.hooks.count(`transport.silentPeer.${action.kind}`);
            this.hooks.ping(node, action.peer);
            break;
          case 'silent': {
            this.hooks.count('transport.silentPeer');
            this.shunned.add(`${node}>${action.peer}`);
            const owed = [...(owes.get(action.peer)?.values() ?? [])];
            owes.delete(action.peer);
            this.hooks.failOwed(node, action.peer, owed);
            break;
          }
        }
      }
      if (owes.size > 0 || silent.silentPeers().length > 0) watching = true;
    }
    if (watching) this.scheduleCheck();
  }
}
