import { connect, Socket, type Server } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Principal } from '../../core/machines/effects.ts';
import { nativeCrc32 } from '../driver/native-checksum.ts';
import { decodeFrame, FrameReader, InPlaceFrameReader, WireError, type DecodedFrame } from '../wire/index.ts';
import { looksLikeTls, socketErrorReason } from './tls.ts';

export interface ConnectionLimits {
  readonly maxFrameBytes: number;
  /** A frame that has begun must be complete within this long (a slow-loris sender is cut off). */
  readonly frameTimeoutMs: number;
}

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
  private closedFlag = false;
  private receivedAny = false;
  /** Node ids that spoke on this connection: replies to them go back here. */
  readonly speakers = new Set<string>();
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
    const reading = new InPlaceReading(limits.maxFrameBytes);
    const socket = connect({ host: address.host, port: address.port, onread: reading.onread });
    return new Connection(socket, limits, events, reading);
  }

  constructor(
    readonly socket: Socket,
    private readonly limits: ConnectionLimits,
    private readonly events: ConnectionEvents,
    inPlace?: InPlaceReading,
  ) {
    this.reader = inPlace?.reader ?? new FrameReader(limits.maxFrameBytes);
    inPlace?.attach(this);
    socket.setNoDelay(true);
    if (inPlace === undefined) socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.closeReason ??= socketErrorReason(error, socket);
    });
    socket.on('close', () => this.onSocketClosed());
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Writes one frame given as pieces (head and raw payloads) without copying them. */
  /**
   * Writes a frame's pieces in one gather write. `written` runs once the socket no longer needs them (they reached
   * the kernel, or the write failed); never when nothing was written (the connection had closed).
   */
  write(pieces: readonly Uint8Array[], written?: () => void): void {
    if (this.closedFlag || this.socket.destroyed) return;
    if (pieces.length === 1) {
      this.socket.write(pieces[0]!, written);
      return;
    }
    this.socket.cork();
    const last = pieces.length - 1;
    for (let i = 0; i < last; i += 1) this.socket.write(pieces[i]!);
    this.socket.write(pieces[last]!, written);
    this.socket.uncork();
  }

  /** Closes at once, for a fault; `reason` is reported through onClose. */
  destroy(reason: string): void {
    this.closeReason ??= reason;
    this.socket.destroy();
  }

  /** Closes after what was written has been sent (a refusal's reply must reach the peer). */
  end(reason?: string): void {
    if (reason !== undefined) this.closeReason ??= reason;
    this.socket.end();
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
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
      this.destroy(describe(error));
      return;
    }
    this.deliver(bodies);
  }

  /** True when the first bytes of a plaintext connection are TLS (and the connection is being closed). */
  private spokeTls(first: Uint8Array): boolean {
    if (this.receivedAny) return false;
    this.receivedAny = true;
    if (this.socket instanceof TLSSocket || !looksLikeTls(first)) return false;
    this.destroy(
      'the peer speaks TLS on this plaintext connection: svc.ssl.enabled must be the same on both sides',
    );
    return true;
  }

  private deliver(bodies: readonly Uint8Array[]): void {
    for (const body of bodies) {
      let frame: DecodedFrame;
      try {
        frame = decodeFrame(body);
      } catch (error) {
        this.destroy(describe(error));
        return;
      }
      this.events.onFrame(frame);
      if (this.closedFlag || this.socket.destroyed) return;
    }
    this.armFrameTimer();
  }

  private armFrameTimer(): void {
    if (this.reader.buffered === 0) {
      if (this.frameTimer !== undefined) clearTimeout(this.frameTimer);
      this.frameTimer = undefined;
      return;
    }
    if (this.frameTimer !== undefined) return;
    this.frameTimer = setTimeout(() => {
      this.destroy(
        `frame incomplete after ${this.limits.frameTimeoutMs} ms (${this.reader.buffered} bytes received): ` +
          'the peer sends too slowly (svc.network.timeout)',
      );
    }, this.limits.frameTimeoutMs);
    this.frameTimer.unref();
  }

  private onSocketClosed(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    if (this.frameTimer !== undefined) clearTimeout(this.frameTimer);
    if (this.closeReason === undefined && this.reader.buffered > 0) {
      this.closeReason = `truncated frame: the peer closed with ${this.reader.buffered} bytes of a frame unread`;
    }
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

  constructor(maxFrameBytes: number) {
    // The batches of large frames are checksummed as they arrive, for the core's check to recall.
    this.reader = new InPlaceFrameReader(maxFrameBytes, nativeCrc32);
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
  maxFrameBytes: number,
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
    const reading = new InPlaceReading(maxFrameBytes);
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
