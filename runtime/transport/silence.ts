import { pausedSince, SilentPeers, type SilentPeerSettings } from '../../core/interpreter/silent-peers.ts';
import type { PlantedBug } from '../../core/planted-bugs.ts';

/** What the transport does for the watch: the connections are the transport's. */
export interface SilenceHooks {
  /** Each peer address that owes answers now, with when the oldest was asked (ms). */
  owing(): Iterable<readonly [string, number]>;
  /** Sends a ping on the open connections to `peer` that owe answers. */
  ping(peer: string): void;
  /** `peer` is silent: close its connections (failing what they owe), never to be used again. */
  silent(peer: string, unheardMs: number): void;
  /** `peer` was heard from again after its silence. */
  back(peer: string): void;
  /** Opens a connection to `peer` (unless one is opening): its handshake's reply is the sign of life. */
  probe(peer: string): void;
  now(): number;
  /** The process did not run for `pausedMs` (a check came that late): its peers' silence restarts from now. */
  resumed?(pausedMs: number): void;
}

/**
 * The transport's watch on the peer addresses it waits for: the core's SilentPeers, run on a timer. A silent peer
 * is probed with a new connection: the reply to its handshake shows that the peer's process, not only its host,
 * answers again (a host that completes a TCP handshake may still have a frozen process behind it).
 */
export class SilenceWatch {
  private readonly peers: SilentPeers<string>;
  private readonly timer: NodeJS.Timeout;
  private readonly checkEveryMs: number;
  private lastCheckAt: number;

  constructor(
    readonly settings: SilentPeerSettings,
    private readonly hooks: SilenceHooks,
    plantedBug?: PlantedBug,
  ) {
    this.peers = new SilentPeers(settings, plantedBug === undefined ? {} : { plantedBug });
    // Twice per ping interval, so that a ping and a silence come within half an interval of their bounds.
    this.checkEveryMs = Math.max(1, Math.floor(settings.pingAfterMs / 2));
    this.lastCheckAt = hooks.now();
    this.timer = setInterval(() => this.check(), this.checkEveryMs);
    this.timer.unref();
  }

  /** Something arrived from `peer` (any frame on a connection to it: an answer, a pong, a probe's handshake reply). */
  heard(peer: string): void {
    if (this.peers.heard(peer, this.hooks.now())) this.hooks.back(peer);
  }

  /** Whether a request may be started to `peer`: false from its silence until it is heard from. */
  mayAsk(peer: string): boolean {
    return this.peers.mayAsk(peer);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = this.hooks.now();
    // A check this late means the process did not run meanwhile (SIGSTOP, a starved machine): the time is its own
    // silence, not its peers' (SilentPeers.resumed).
    if (pausedSince(this.lastCheckAt, now, this.checkEveryMs)) {
      this.peers.resumed(now);
      this.hooks.resumed?.(now - this.lastCheckAt);
    }
    this.lastCheckAt = now;
    for (const action of this.peers.check(now, this.hooks.owing())) {
      switch (action.kind) {
        case 'ping':
          this.hooks.ping(action.peer);
          break;
        case 'silent':
          this.hooks.silent(action.peer, action.unheardMs);
          break;
        case 'probe':
          this.hooks.probe(action.peer);
          break;
      }
    }
  }
}
