import { WireError } from './errors.ts';

/** Bytes of the length prefix in front of every frame body (unsigned, big-endian). */
export const LENGTH_PREFIX_BYTES = 4;

/**
 * Cuts a byte stream into frame bodies. A body that lies whole inside one received chunk is handed out as a view
 * of that chunk (no copy); only a body split across chunks is gathered into one buffer, the one copy a stream
 * socket forces. A length above the limit throws at once, before any of the frame is buffered.
 */
export class FrameReader {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes of an unfinished frame held back (0 when the stream is at a frame boundary). */
  get buffered(): number {
    return this.pendingBytes;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    let data = chunk;
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      const needed = this.neededWithPending();
      if (needed === undefined || this.pendingBytes + chunk.byteLength < needed) {
        this.pendingBytes += chunk.byteLength;
        return [];
      }
      data = concat(this.pending, this.pendingBytes + chunk.byteLength);
      this.pending = [];
      this.pendingBytes = 0;
    }
    const bodies: Uint8Array[] = [];
    let offset = 0;
    while (data.byteLength - offset >= LENGTH_PREFIX_BYTES) {
      const length = readLength(data, offset);
      this.check(length);
      const end = offset + LENGTH_PREFIX_BYTES + length;
      if (end > data.byteLength) break;
      bodies.push(data.subarray(offset + LENGTH_PREFIX_BYTES, end));
      offset = end;
    }
    if (offset < data.byteLength) {
      const rest = data.subarray(offset);
      this.pending = [rest];
      this.pendingBytes = rest.byteLength;
    }
    return bodies;
  }

  /** The whole size (prefix and body) of the frame being gathered, once its prefix has arrived. */
  private neededWithPending(): number | undefined {
    const total = this.pendingBytes + this.pending[this.pending.length - 1]!.byteLength;
    if (total < LENGTH_PREFIX_BYTES) return undefined;
    const head =
      this.pending[0]!.byteLength >= LENGTH_PREFIX_BYTES ? this.pending[0]! : concat(this.pending, total);
    const length = readLength(head, 0);
    this.check(length);
    return LENGTH_PREFIX_BYTES + length;
  }

  private check(length: number): void {
    if (length > this.maxFrameBytes) {
      throw new WireError(
        'oversized',
        `a frame of ${length} bytes exceeds the limit of ${this.maxFrameBytes} (svc.network.frame.maxSize)`,
      );
    }
    if (length === 0) throw new WireError('malformed', 'an empty frame');
  }
}

function readLength(data: Uint8Array, offset: number): number {
  return (
    ((data[offset]! << 24) >>> 0) + (data[offset + 1]! << 16) + (data[offset + 2]! << 8) + data[offset + 3]!
  );
}

function concat(pieces: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}
