/**
 * A bare sink process, the baselines' stand-in for a worker (`node --import tsx bench/dataplane/sink.ts`, driven
 * over IPC by bench/dataplane.bench.ts, ./protocol.ts). No svc code at all: node:net, node:fs and, to keep,
 * @node-rs/crc32.
 *
 * - push port: reads a stream and walks its length prefixes (counting frames, nothing decoded), then discards it
 *   (`discard`), keeps it with the least work a memory tier does (`keep`: one CRC-32 pass over every byte with the
 *   SIMD checksum svc's processes use, and one copy into memory faulted in at start, a ring larger than any cache),
 *   or appends it to a file of its own with plain sequential writes and one fdatasync at the end (`file`); with a
 *   relay set (`relay-to`) it also forwards every byte to another sink's relay port.
 * - relay port: the same, never relaying further (a replica).
 * - serve port: bare TCP reads of files: a request is a relative path and a newline, the answer its length (u64 BE)
 *   and its bytes, read from the file in pieces of `chunkBytes` (svc.shuffle.chunk.size) as a worker serves chunks.
 *
 * At the end of a pushed stream (the sender half-closes) the sink answers one JSON line (./protocol.ts SinkAck),
 * after its file is synced and its relay peer has answered, then closes.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, connect, type Server, type Socket } from 'node:net';
import path from 'node:path';
import type { Endpoint, FromSink, SinkAck, SinkMode, ToSink } from './protocol.ts';

const HOST = '127.0.0.1';
/** Bytes queued for the file before the socket is paused. */
const FILE_QUEUE_LIMIT = 8 * 2 ** 20;

/**
 * The ring `keep` copies into: larger than any cache (each copy writes memory gone cold, as a memory tier's does) and
 * faulted in at init, as a worker's memory pool is at its start. Wrapping around costs what a fresh block would.
 */
const KEEP_RING_BYTES = 256 * 2 ** 20;

let mode: SinkMode = 'discard';
let dir = '.';
let chunkBytes = 8 * 2 ** 20;
let relayTo: Endpoint | undefined;
let streams = 0;
const servers: Server[] = [];

/** What `keep` does to every chunk: checked and copied, the least a memory tier does with a pushed byte. */
class Keeper {
  private readonly ring = new Uint8Array(KEEP_RING_BYTES);
  private at = 0;
  /** The running CRC-32 of everything kept. */
  checksum = 0;

  constructor(private readonly crc32: (bytes: Uint8Array, previous: number) => number) {
    // One write per page faults the ring in now, outside any measurement.
    for (let offset = 0; offset < this.ring.length; offset += 4096) this.ring[offset] = 1;
  }

  keep(chunk: Uint8Array): void {
    this.checksum = this.crc32(chunk, this.checksum);
    let copied = 0;
    while (copied < chunk.length) {
      if (this.at === this.ring.length) this.at = 0;
      const n = Math.min(chunk.length - copied, this.ring.length - this.at);
      this.ring.set(n === chunk.length ? chunk : chunk.subarray(copied, copied + n), this.at);
      this.at += n;
      copied += n;
    }
  }
}

let keeper: Keeper | undefined;

function loadCrc32(): (bytes: Uint8Array, previous: number) => number {
  const { crc32 } = createRequire(import.meta.url)('@node-rs/crc32') as {
    crc32: (input: Uint8Array, initialState?: number) => number;
  };
  return (bytes, previous) => crc32(bytes, previous);
}

function send(message: FromSink): void {
  process.send?.(message);
}

/** Counts length-prefixed frames in a byte stream cut anywhere. */
class FrameCounter {
  frames = 0;
  private left = 0;
  private readonly head = Buffer.alloc(4);
  private headBytes = 0;

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.left > 0) {
        const take = Math.min(this.left, chunk.length - at);
        this.left -= take;
        at += take;
        continue;
      }
      const take = Math.min(4 - this.headBytes, chunk.length - at);
      chunk.copy(this.head, this.headBytes, at, at + take);
      this.headBytes += take;
      at += take;
      if (this.headBytes === 4) {
        this.left = this.head.readUInt32BE(0);
        this.headBytes = 0;
        this.frames += 1;
      }
    }
  }

  get whole(): boolean {
    return this.left === 0 && this.headBytes === 0;
  }
}

/** Appends chunks to a file in order, one writev at a time, with everything queued meanwhile merged. */
class Appender {
  private queue: Buffer[] = [];
  private queued = 0;
  private position = 0;
  private writing: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly handle: FileHandle,
    private readonly onRoom: () => void,
  ) {}

  /** False when the caller should stop reading until onRoom. */
  push(chunk: Buffer): boolean {
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.writing ??= this.drain();
    return this.queued < FILE_QUEUE_LIMIT;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const chunks = this.queue;
        this.queue = [];
        let bytes = 0;
        for (const chunk of chunks) bytes += chunk.length;
        await writeAll(this.handle, chunks, this.position);
        this.position += bytes;
        const wasFull = this.queued >= FILE_QUEUE_LIMIT;
        this.queued -= bytes;
        if (wasFull && this.queued < FILE_QUEUE_LIMIT) this.onRoom();
      }
    } catch (error) {
      this.failure = error instanceof Error ? error : new Error(String(error));
    } finally {
      this.writing = undefined;
    }
  }

  async finish(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    if (this.failure !== undefined) throw this.failure;
    await this.handle.datasync();
    await this.handle.close();
  }
}

async function writeAll(handle: FileHandle, chunks: Buffer[], position: number): Promise<void> {
  let pending = chunks;
  let at = position;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending, at);
    at += bytesWritten;
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const chunk of pending) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      rest.push(skip > 0 ? chunk.subarray(skip) : chunk);
      skip = 0;
    }
    pending = rest;
  }
}

/** Reads one JSON line from a socket until it closes. */
function ackOf(socket: Socket): Promise<SinkAck> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(JSON.parse(text.trim()) as SinkAck);
      } catch {
        reject(new Error(`no acknowledgement from the relay peer (got '${text.slice(0, 200)}')`));
      }
    });
  });
}

/** One pushed stream: count, keep or discard, maybe relay; acknowledge at its end. */
async function receive(socket: Socket, relay: Endpoint | undefined, kind: 'push' | 'relay'): Promise<void> {
  socket.setNoDelay(true);
  const counter = new FrameCounter();
  let bytes = 0;
  // Reading stops while the file's queue is full or the relay's socket buffer is: the sink's back-pressure.
  let fileFull = false;
  let relayFull = false;
  const flow = () => {
    if (fileFull || relayFull) socket.pause();
    else socket.resume();
  };
  const file = mode === 'file' ? `${kind}-${process.pid}-${++streams}.data` : undefined;
  const appender =
    file === undefined
      ? undefined
      : new Appender(await open(path.join(dir, file), 'w'), () => {
          fileFull = false;
          flow();
        });
  let relaySocket: Socket | undefined;
  let relayAck: Promise<SinkAck> | undefined;
  if (relay !== undefined) {
    relaySocket = connect({ host: relay.host, port: relay.port });
    relaySocket.setNoDelay(true);
    relayAck = ackOf(relaySocket);
    relayAck.catch(() => undefined); // awaited at the stream's end
    relaySocket.on('drain', () => {
      relayFull = false;
      flow();
    });
  }
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('end', resolve);
    socket.on('error', reject);
  });
  socket.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    counter.push(chunk);
    keeper?.keep(chunk);
    if (appender !== undefined && !appender.push(chunk)) fileFull = true;
    if (relaySocket !== undefined && !relaySocket.write(chunk)) relayFull = true;
    if (fileFull || relayFull) flow();
  });
  await ended;
  if (!counter.whole) throw new Error(`a ${kind} stream ended inside a frame`);
  await appender?.finish();
  let relayed: SinkAck | undefined;
  if (relaySocket !== undefined) {
    relaySocket.end();
    relayed = await relayAck;
  }
  const ack: SinkAck = {
    bytes,
    frames: counter.frames,
    ...(file === undefined ? {} : { file }),
    ...(relayed === undefined ? {} : { relayed }),
  };
  socket.end(`${JSON.stringify(ack)}\n`);
}

/** Serves files: `path\n` in, `u64 length` and the bytes out, for as many requests as the connection sends. */
function serve(socket: Socket): void {
  socket.setNoDelay(true);
  let text = '';
  let busy: Promise<void> = Promise.resolve();
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    let newline = text.indexOf('\n');
    while (newline >= 0) {
      const name = text.slice(0, newline);
      text = text.slice(newline + 1);
      busy = busy
        .then(() => sendFile(socket, name))
        .catch((error: unknown) => {
          socket.destroy();
          fail(error);
        });
      newline = text.indexOf('\n');
    }
  });
  socket.on('error', () => socket.destroy());
}

async function sendFile(socket: Socket, name: string): Promise<void> {
  const file = path.resolve(dir, name);
  if (!file.startsWith(path.resolve(dir) + path.sep)) throw new Error(`${name} is outside ${dir}`);
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(8);
    head.writeBigUInt64BE(BigInt(size));
    socket.write(head);
    let offset = 0;
    while (offset < size) {
      const piece = Buffer.allocUnsafe(Math.min(chunkBytes, size - offset));
      let filled = 0;
      while (filled < piece.length) {
        const { bytesRead } = await handle.read(piece, filled, piece.length - filled, offset + filled);
        if (bytesRead === 0) throw new Error(`${name} shrank while being served`);
        filled += bytesRead;
      }
      offset += filled;
      if (!socket.write(piece)) await new Promise((resolve) => socket.once('drain', resolve));
    }
  } finally {
    await handle.close();
  }
}

function listen(handler: (socket: Socket) => void): Promise<number> {
  // Half-open: a stream's sender ends its side, then waits for the acknowledgement on the other.
  const server = createServer({ allowHalfOpen: true }, handler);
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: HOST, port: 0, backlog: 1024 }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

function fail(error: unknown): void {
  send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}

async function init(message: Extract<ToSink, { type: 'sink-init' }>): Promise<void> {
  mode = message.mode;
  dir = message.dir;
  chunkBytes = message.chunkBytes;
  if (mode === 'keep') keeper = new Keeper(loadCrc32());
  const onStream = (kind: 'push' | 'relay') => (socket: Socket) => {
    receive(socket, kind === 'push' ? relayTo : undefined, kind).catch((error: unknown) => {
      socket.destroy();
      fail(error);
    });
  };
  const ports = {
    push: await listen(onStream('push')),
    relay: await listen(onStream('relay')),
    serve: await listen(serve),
  };
  send({ type: 'sink-ready', pid: process.pid, ports });
}

process.on('message', (message: ToSink) => {
  switch (message.type) {
    case 'sink-init':
      init(message).catch(fail);
      return;
    case 'relay-to':
      relayTo = message.relay;
      send({ type: 'relaying' });
      return;
    case 'exit':
      for (const server of servers) server.close();
      process.exit(0);
  }
});
// The benchmark is gone: nothing to serve.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid });
