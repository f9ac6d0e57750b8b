import type { PlantedBug } from '../planted-bugs.ts';

/**
 * When a peer that owes answers has gone silent, decided once for both drivers (the runtime's transport per remote
 * address, the simulator's world per process). On loopback a dead peer answers with a reset at once; on a real
 * network a cut-off host answers nothing, and each request sent to it would wait out its own deadline (two minutes
 * for a push). So a driver watches the peers it is waiting on:
 *
 * - A peer that owes an answer and has not been heard from for `pingAfterMs` is asked for a sign of life (a ping
 *   the peer's driver answers without its machine: a busy machine still answers).
 * - One that stays unheard for `silentAfterMs` while it owes answers is **silent**: the driver fails every request
 *   it owes at once, closes what connects to it (a connection that went silent is never used again), and starts no
 *   request to it until it is heard from again. Requests meanwhile fail at once, so that the machines move the
 *   work elsewhere (revive, the other copy) instead of waiting.
 * - A silent peer is probed every `pingAfterMs` (a new connection, a ping); the first sign of life ends its silence.
 *
 * A peer that owes nothing is never judged: an idle peer is not a silent one.
 */
export interface SilentPeerSettings {
  /** How long a peer that owes answers may be unheard from before it is asked for a sign of life. */
  readonly pingAfterMs: number;
  /** How long it may stay unheard from, while it owes answers, before it is silent. */
  readonly silentAfterMs: number;
}

export interface SilentPeersOptions {
  /**
   * Test-only (core/planted-bugs.ts): `silent-peer-reused` forgets a peer's silence as soon as it is declared, so
   * requests go on being started to it (the reference's pooled connection reused after it timed out).
   * `silent-peer-never-heard` keeps a peer silent when it is heard from again, so that a worker back from a
   * partition is never used again by that node.
   */
  readonly plantedBug?: PlantedBug;
}

/** What the driver does for one peer, from one check. */
export type SilenceAction<Peer> =
  /** Ask the peer for a sign of life. */
  | { readonly kind: 'ping'; readonly peer: Peer }
  /** The peer has gone silent: fail what it owes, drop its connections, start nothing to it. */
  | { readonly kind: 'silent'; readonly peer: Peer; readonly unheardMs: number }
  /** Probe a silent peer (a new connection, a ping) to learn whether it is back. */
  | { readonly kind: 'probe'; readonly peer: Peer };

interface Watch {
  /** When the peer was last heard from; undefined: never since it was first asked. */
  heardAt: number | undefined;
  /** When the last ping or probe went to it. */
  pingedAt: number | undefined;
  silent: boolean;
}

/** Checks missed in a row before a node counts as not having run (a busy event loop delays one or two). */
const PAUSED_AFTER_CHECKS = 4;

/**
 * For a driver that checks every `checkEveryMs`: whether a check at `now`, the one before at `lastCheckAt`, shows
 * that the node did not run meanwhile (then call `resumed(now)`). The simulator's checks run only while something
 * is owed and its nodes are never paused, so it has no use for this.
 */
export function pausedSince(lastCheckAt: number, now: number, checkEveryMs: number): boolean {
  return now - lastCheckAt > PAUSED_AFTER_CHECKS * checkEveryMs;
}

export class SilentPeers<Peer> {
  private readonly watches = new Map<Peer, Watch>();
  /** When this node last came back from not running (resumed): nothing could be heard before it. */
  private resumedAt = -Infinity;

  constructor(
    readonly settings: SilentPeerSettings,
    private readonly options: SilentPeersOptions = {},
  ) {
    if (!(settings.pingAfterMs > 0 && settings.silentAfterMs > settings.pingAfterMs))
      throw new RangeError(
        `a silent peer needs 0 < pingAfterMs (${settings.pingAfterMs}) < silentAfterMs (${settings.silentAfterMs})`,
      );
  }

  /**
   * Something arrived from `peer` (an answer, a request, a ping's reply, a new connection's handshake). Returns true
   * when this ends its silence.
   */
  heard(peer: Peer, now: number): boolean {
    const watch = this.watch(peer);
    const wasSilent = watch.silent;
    watch.heardAt = now;
    if (this.options.plantedBug === 'silent-peer-never-heard') return false;
    watch.silent = false;
    return wasSilent;
  }

  /**
   * This node did not run until `now` (its process was stopped, or starved of the processor): whatever it did not
   * hear meanwhile it could not have heard, so no peer is judged on that time. Each peer's silence is measured from
   * now; peers already silent stay so until heard from. Without this a worker resumed after a SIGSTOP of 20 s found
   * every peer it was waiting on "silent for 20 s" at its first check and failed their requests at once: its
   * replicas' workers were blamed and excluded for its own pause.
   */
  resumed(now: number): void {
    this.resumedAt = Math.max(this.resumedAt, now);
  }

  /** Whether a request to `peer` may be started: false from its silence until it is heard from again. */
  mayAsk(peer: Peer): boolean {
    return this.watches.get(peer)?.silent !== true;
  }

  isSilent(peer: Peer): boolean {
    return this.watches.get(peer)?.silent === true;
  }

  /** Peers silent now. */
  silentPeers(): Peer[] {
    return [...this.watches].filter(([, watch]) => watch.silent).map(([peer]) => peer);
  }

  /**
   * The driver's periodic look at its peers: `owing` lists each peer that owes answers now, with when the oldest
   * was asked. Checks every `pingAfterMs / 2` or more often keep the bounds of the settings.
   */
  check(now: number, owing: Iterable<readonly [Peer, number]>): SilenceAction<Peer>[] {
    const actions: SilenceAction<Peer>[] = [];
    const owes = new Set<Peer>();
    for (const [peer, owedSince] of owing) {
      owes.add(peer);
      const watch = this.watch(peer);
      if (watch.silent) continue;
      // A peer is unheard from since the later of its last sign of life and the oldest answer it owes: an answer
      // owed for an hour to a peer heard from a second ago is a slow answer, not a silent peer.
      const quietSince = Math.max(owedSince, watch.heardAt ?? owedSince, this.resumedAt);
      const unheardMs = now - quietSince;
      if (unheardMs >= this.settings.silentAfterMs) {
        actions.push({ kind: 'silent', peer, unheardMs });
        watch.silent = this.options.plantedBug !== 'silent-peer-reused';
        watch.pingedAt = now;
      } else if (unheardMs >= this.settings.pingAfterMs && this.duePing(watch, quietSince, now)) {
        actions.push({ kind: 'ping', peer });
        watch.pingedAt = now;
      }
    }
    for (const [peer, watch] of this.watches) {
      if (watch.silent) {
        if (watch.pingedAt === undefined || now - watch.pingedAt >= this.settings.pingAfterMs) {
          actions.push({ kind: 'probe', peer });
          watch.pingedAt = now;
        }
      } else if (!owes.has(peer)) {
        // Owes nothing and is not silent: nothing to remember until it is asked again.
        this.watches.delete(peer);
      }
    }
    return actions;
  }

  /** Forgets `peer` (it left the cluster, or its address is no longer used). */
  forget(peer: Peer): void {
    this.watches.delete(peer);
  }

  private watch(peer: Peer): Watch {
    let watch = this.watches.get(peer);
    if (watch === undefined) {
      watch = { heardAt: undefined, pingedAt: undefined, silent: false };
      this.watches.set(peer, watch);
    }
    return watch;
  }

  private duePing(watch: Watch, quietSince: number, now: number): boolean {
    return (
      watch.pingedAt === undefined ||
      watch.pingedAt < quietSince ||
      now - watch.pingedAt >= this.settings.pingAfterMs
    );
  }
}
