import { connect, Socket, type Server } from 'node:net';
import { TLSSocket } from 'node:tls';
import { DEFAULT_MAX_QUEUED_BYTES, sendQueueVerdict } from '../../core/interpreter/connection-limits.ts';
import type { Principal } from '../../core/machines/effects.ts';
import { nativeCrc32 } from '../driver/native-checksum.ts';
import {
  decodeFrame,
  frameLimit,
  FrameReader,
  HANDSHAKE_LIMIT,
  InPlaceFrameReader,
  WireError,
  type DecodedFrame,
  type ReceiveBodies,
} from '../wire/index.ts';
import type { ReceiveMemory } from './receive-memory.ts';
import { looksLikeTls, socketErrorReason } from './tls.ts';

export interface ConnectionLimits {
  /** The largest frame once the handshake completed (svc.network.frame.maxSize); before it, HANDSHAKE_LIMIT. */
  readonly maxFrameBytes: number;
  /** A frame that has begun must be complete within this long (a slow-loris sender is cut off). */
  readonly frameTimeoutMs: number;
  /**
   * The most bytes a connection may have waiting to be sent (svc.network.send.maxQueuedBytes): a peer that reads
   * more slowly than this process writes is cut off there rather than making it hold without bound. Absent:
   * DEFAULT_MAX_QUEUED_BYTES.
   */
  readonly maxQueuedBytes?: number;
  /** Where the bytes of partly received frames are counted (and bounded) for the whole process. */
  readonly receiveMemory?: ReceiveMemory;
  /**
   * Where large frame bodies are read into (a worker's pool, runtime/wire/receive-bodies.ts): each is lent with
   * the connection's hold, which it releases once the frame was delivered; absent, fresh memory each.
   */
  readonly receiveBodies?: ReceiveBodies;
}

/** Why reading from a connection stops: the worker's back-pressure, or replies the peer does not read. */
export type PauseReason = 'backPressure' | 'sending';

export interface ConnectionEvents {
  onFrame(frame: DecodedFrame): void;
  /** Called once. `reason` is set when the connection was closed because of a fault (logged by the owner). */
  onClose(reason: string | undefined): void;
}

/**
 * One TCP connection carrying svc frames, either direction: reads frames incrementally, writes a frame's pieces in
 * one gather write, and closes itself on a malformed, oversized, truncated or too slow frame. It knows nothing of
 * handshakes or routing (./transport.ts). A TLS socket is a socket: frames travel on it unchanged.
 *
 * Plain TCP connections are read in place: the socket reads into where the frames stay (`InPlaceFrameReader`,
 * net's `onread`), those this process opens through `Connection.open`, accepted ones through `acceptInPlace`. TLS
 * connections (node offers no `onread` there) are read in node's 64 KiB chunks (`FrameReader`).
 */
export class Connection {
  private readonly reader: FrameReader | InPlaceFrameReader;
  private frameTimer: NodeJS.Timeout | undefined;
  private closeReason: string | undefined;
  /** A short name of why the connection was closed, for counting repeats in the log (../log-repeats.ts). */
  private closeCauseName: string | undefined;
  private closedFlag = false;
  private receivedAny = false;
  private handshakeDone = false;
  private readonly pausedFor = new Set<PauseReason>();
  private socketPaused = false;
  /**
   * Whether reading stops while replies wait to be sent (set on accepted connections): a peer that asks and does
   * not read the answers is not read either until it does, so whoever produces the answers waits.
   */
  pacesReading = false;
  /**
   * Who the peer proved to be (svc.auth.enabled), stamped on every envelope that arrives here; undefined with
   * authentication off, or while nothing is proved (yet). Set by the transport, from the handshake only.
   */
  principal: Principal | undefined;

  /** Opens a plain TCP connection to `host:port`, read in place. */
  static open(
    address: { readonly host: string; readonly port: number },
    limits: ConnectionLimits,
    events: ConnectionEvents,
  ): Connection {
    const reading = new InPlaceReading();
    const socket = connect({ host: address.host, port: address.port, onread: reading.onread });
    return new Connection(socket, limits, events, reading);
  }

  constructor(
    readonly socket: Socket,
    private readonly limits: ConnectionLimits,
    private readonly events: ConnectionEvents,
    inPlace?: InPlaceReading,
  ) {
    this.reader = inPlace?.reader ?? new FrameReader(HANDSHAKE_LIMIT);
    if (limits.receiveBodies !== undefined) this.reader.takeBodiesFrom(limits.receiveBodies);
    inPlace?.attach(this);
    socket.setNoDelay(true);
    socket.on('drain', () => this.resumeFor('sending'));
    if (inPlace === undefined) socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.closeReason ??= socketErrorReason(error, socket);
    });
    socket.on('close', () => this.onSocketClosed());
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** A short name of why the connection was closed (set with the reason), for counting repeats. */
  get closeCause(): string | undefined {
    return this.closeCauseName;
  }

  /** The handshake completed: frames up to svc.network.frame.maxSize are accepted from now on. */
  handshaken(): void {
    this.reader.setLimit(frameLimit(this.limits.maxFrameBytes));
    this.handshakeDone = true;
  }

  /** Whether `handshaken` was called: an accepted connection's back-pressure applies only from then on. */
  get isHandshaken(): boolean {
    return this.handshakeDone;
  }

  /**
   * Writes a frame's pieces in one gather write. `written` runs once the socket no longer needs them (they reached
   * the kernel, or the write failed); never when nothing was written (the connection had closed). A connection
   * with more than `maxQueuedBytes` waiting is closed: its peer does not read.
   */
  write(pieces: readonly Uint8Array[], written?: () => void): void {
    if (this.closedFlag || this.socket.destroyed) return;
    if (pieces.length === 1) {
      this.socket.write(pieces[0]!, written);
    } else {
      this.socket.cork();
      const last = pieces.length - 1;
      for (let i = 0; i < last; i += 1) this.socket.write(pieces[i]!);
      this.socket.write(pieces[last]!, written);
      this.socket.uncork();
    }
    this.checkQueued();
  }

  /** Bytes written to the connection that the kernel has not taken yet (they go as the event loop turns). */
  get queuedBytes(): number {
    return this.socket.writableLength;
  }

  private checkQueued(): void {
    const queued = this.socket.writableLength;
    const max = this.limits.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    const verdict = sendQueueVerdict(queued, max);
    if (verdict === 'close') {
      this.destroy(
        `the peer reads too slowly: ${queued} bytes wait to be sent, more than ${max} ` +
          '(svc.network.send.maxQueuedBytes)',
        'readsTooSlowly',
      );
      return;
    }
    if (this.pacesReading && verdict === 'pause') this.pauseFor('sending');
  }

  /** Closes at once, for a fault; `reason` is reported through onClose, `cause` names it for counting repeats. */
  destroy(reason: string, cause?: string): void {
    if (this.closeReason === undefined) {
      this.closeReason = reason;
      this.closeCauseName = cause;
    }
    this.socket.destroy();
    // Counted free at once, so that whoever closed it for memory sees the memory back.
    this.limits.receiveMemory?.release(this);
  }

  /** Closes after what was written has been sent (a refusal's reply must reach the peer). */
  end(reason?: string): void {
    if (reason !== undefined) this.closeReason ??= reason;
    this.socket.end();
  }

  /**
   * Stops reading for `reason` once the frame under way is complete: a frame is never left half read by this
   * process (the peer could not finish it, and it would hold its bytes for as long as the pause lasts), and the
   * frame's deadline never runs while this process is the one not reading.
   */
  pauseFor(reason: PauseReason): void {
    if (this.pausedFor.has(reason)) return;
    this.pausedFor.add(reason);
    this.applyPause();
  }

  /** Reads again once no reason to pause remains. */
  resumeFor(reason: PauseReason): void {
    if (!this.pausedFor.delete(reason)) return;
    this.applyPause();
  }

  /** Whether reading is stopped (not merely asked to stop at the end of the frame under way). */
  get paused(): boolean {
    return this.socketPaused;
  }

  private applyPause(): void {
    if (this.closedFlag) return;
    if (this.pausedFor.size > 0 && !this.socketPaused && this.reader.buffered === 0) {
      this.socketPaused = true;
      this.socket.pause();
      this.stopFrameTimer();
    } else if (this.pausedFor.size === 0 && this.socketPaused) {
      this.socketPaused = false;
      this.socket.resume();
      this.armFrameTimer();
    }
  }

  private onData(chunk: Buffer): void {
    if (this.closedFlag || this.spokeTls(chunk)) return;
    this.cut(() => (this.reader as FrameReader).push(chunk));
  }

  /** `count` bytes were read into `region` (an in-place socket's onread). */
  onReadInPlace(count: number, region: Uint8Array): void {
    if (this.closedFlag || this.spokeTls(region.subarray(0, count))) return;
    this.cut(() => (this.reader as InPlaceFrameReader).received(count));
  }

  /** Delivers the frames the reader cut, or closes the connection on the reader's refusal. */
  private cut(read: () => Uint8Array[]): void {
    let bodies: Uint8Array[];
    try {
      bodies = read();
    } catch (error) {
      this.destroy(describe(error), error instanceof WireError ? error.reason : 'unreadable');
      return;
    }
    if (!this.countHeld()) return;
    this.deliver(bodies);
  }

  /** Tells the process's count what this connection holds now; false when that closed it (the largest, past the limit). */
  private countHeld(): boolean {
    const memory = this.limits.receiveMemory;
    if (memory === undefined) return true;
    if (this.socket.destroyed) return false;
    memory.update(this, this.reader.held);
    // Past the process's limit, the largest frames are given up: maybe this connection's.
    return !this.socket.destroyed;
  }

  /** True when the first bytes of a plaintext connection are TLS (and the connection is being closed). */
  private spokeTls(first: Uint8Array): boolean {
    if (this.receivedAny) return false;
    this.receivedAny = true;
    if (this.socket instanceof TLSSocket || !looksLikeTls(first)) return false;
    this.destroy(
      'the peer speaks TLS on this plaintext connection: svc.ssl.enabled must be the same on both sides',
      'tlsOnPlaintext',
    );
    return true;
  }

  private deliver(bodies: readonly Uint8Array[]): void {
    for (const body of bodies) {
      let frame: DecodedFrame;
      try {
        frame = decodeFrame(body);
      } catch (error) {
        this.destroy(describe(error), error instanceof WireError ? error.reason : 'unreadable');
        return;
      }
      this.events.onFrame(frame);
      // Whoever took the frame and must keep its bytes holds them by now (or they are never lent again).
      this.limits.receiveBodies?.release(body);
      if (this.closedFlag || this.socket.destroyed) return;
    }
    this.applyPause();
    this.armFrameTimer();
  }

  /**
   * An unfinished frame must be complete within svc.network.timeout of reading it, counted only while this
   * process reads: a connection paused (back-pressure, unread replies) is not the peer's slowness.
   */
  private armFrameTimer(): void {
    if (this.reader.buffered === 0 || this.socketPaused) {
      this.stopFrameTimer();
      return;
    }
    if (this.frameTimer !== undefined) return;
    this.frameTimer = setTimeout(() => {
      this.destroy(
        `frame incomplete after ${this.limits.frameTimeoutMs} ms (${this.reader.buffered} bytes received): ` +
          'the peer sends too slowly (svc.network.timeout)',
        'sendsTooSlowly',
      );
    }, this.limits.frameTimeoutMs);
    this.frameTimer.unref();
  }

  private stopFrameTimer(): void {
    if (this.frameTimer !== undefined) clearTimeout(this.frameTimer);
    this.frameTimer = undefined;
  }

  private onSocketClosed(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.stopFrameTimer();
    if (this.closeReason === undefined && this.reader.buffered > 0) {
      this.closeReason = `truncated frame: the peer closed with ${this.reader.buffered} bytes of a frame unread`;
      this.closeCauseName = 'truncated';
    }
    // What the partly received frame held is the process's again.
    this.limits.receiveMemory?.release(this);
    this.events.onClose(this.closeReason);
  }
}

/** A socket's `onread`, feeding an `InPlaceFrameReader` and, once attached, its connection. */
export class InPlaceReading {
  readonly reader: InPlaceFrameReader;
  private connection: Connection | undefined;
  readonly onread = {
    buffer: (): Uint8Array => this.reader.region(),
    callback: (count: number, region: Uint8Array): boolean => {
      // Bytes arrive only once the socket is connected, by when the connection is attached.
      this.connection!.onReadInPlace(count, region);
      return true; // pausing goes through Connection.pause(), as for any socket
    },
  };

  constructor() {
    // The batches of large frames are checksummed as they arrive, for the core's check to recall. Until the
    // handshake completed, a frame may be a few KiB at most (Connection.handshaken).
    this.reader = new InPlaceFrameReader(HANDSHAKE_LIMIT, nativeCrc32);
  }

  attach(connection: Connection): void {
    this.connection = connection;
  }
}

/** The part of a listening net.Server's handle that accepts: node's own `onconnection` (lib/net.js). */
interface AcceptingHandle {
  onconnection: (status: number, clientHandle: unknown) => void;
}

/**
 * Makes a plain TCP server hand its accepted sockets to `accept` read in place, or returns false where this node
 * does not allow it. Node gives `onread` only to sockets it is asked to create, never to accepted ones, so this
 * takes over the listening handle's `onconnection` and builds the socket from the accepted handle the way node
 * does (`new Socket({ handle })`), with `onread`. Accept errors still go to node's own handler. The server then
 * neither counts these sockets nor waits for them in `close()`: the transport tracks and closes its connections
 * itself. Guarded: a node whose server handle has no `onconnection` keeps the 'connection' event and `FrameReader`
 * (runtime/transport/in-place.test.ts fails on this node if the hook stops taking effect).
 */
export function acceptInPlace(
  server: Server,
  accept: (socket: Socket, reading: InPlaceReading) => void,
): boolean {
  const handle = (server as unknown as { _handle?: Partial<AcceptingHandle> })._handle;
  const original = handle?.onconnection;
  if (handle === undefined || typeof original !== 'function') return false;
  handle.onconnection = function (this: unknown, status: number, clientHandle: unknown): void {
    if (status !== 0 || clientHandle === undefined) {
      original.call(this, status, clientHandle);
      return;
    }
    const reading = new InPlaceReading();
    const options = { handle: clientHandle, readable: true, writable: true, onread: reading.onread };
    const socket = new Socket(options);
    accept(socket, reading);
  };
  return true;
}

function describe(error: unknown): string {
  if (error instanceof WireError) return `${error.reason} frame: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
