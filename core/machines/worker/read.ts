import { STATE_POLICIES } from '../../lifecycle/worker-states.ts';
import type { CloseStream, FetchChunk, OpenStream } from '../../protocol/messages.ts';
import type { Envelope, IoError } from '../effects.ts';
import { admitted } from '../admission.ts';
import { replyToOf } from '../outbox.ts';
import { chunkOffsets, fileNameFor, getFile } from './files.ts';
import { count, log, reply, setEntry, type Outbox } from '../outbox.ts';
import { takeId, type OpPurpose, type ReplyTo, type WorkerMachineState } from './state.ts';
import { recordLatency } from './storage-view.ts';

/**
 * The read path: OpenStream on a committed file gives a stream id and the chunk offsets; FetchChunk reads one chunk
 * (a run of whole batches). A stream ends by itself once its last chunk was served (as Spark's block-transfer
 * stream manager does), so a reader that read everything sends nothing more; CloseStream is for a reader that gives a
 * stream up early. Only committed files are served: a reader must never see a file that is still being written.
 */
export function handleOpenStream(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: OpenStream,
): WorkerMachineState {
  if (!admitted(out, 'worker', s.config.release, envelope)) return s;
  const replyTo = replyToOf(envelope);
  const name = fileNameFor(message.uniqueId, message.mode);
  const file = getFile(s, message.shuffleKey, name);
  const refusal = !STATE_POLICIES[s.lifecycle.state].servesCommitsAndFetches
    ? `the worker is ${s.lifecycle.state} and serves no more reads`
    : file === undefined
      ? `this worker holds no ${message.mode} file ${message.uniqueId} of ${message.shuffleKey}`
      : file.status !== 'committed'
        ? `${message.mode} file ${message.uniqueId} of ${message.shuffleKey} is not committed (${file.status}); only committed files are served`
        : null;
  if (refusal !== null || file === undefined) {
    count(out, 'OpenStreamFailCount');
    log(out, 'warn', 'worker.read.openRefused', { shuffle: message.shuffleKey, file: name, reason: refusal });
    reply(out, replyTo, {
      type: 'OpenStreamResponse',
      status: 'OPEN_STREAM_FAILED',
      streamId: -1,
      chunkOffsets: [],
      message: refusal ?? '',
    });
    return s;
  }
  const streamId = takeId(s);
  const offsets = chunkOffsets(file);
  count(out, 'OpenStreamSuccessCount');
  // A stream without chunks (an empty file) is over as soon as it is open: nothing to remember.
  if (offsets.length > 1) {
    setEntry(s.streams, streamId, { shuffleKey: message.shuffleKey, fileName: name, chunkOffsets: offsets });
  }
  if (message.readFirstChunk === true && offsets.length > 1) {
    // Answered once chunk 0 is read (completeRead), with its bytes.
    startRead(s, out, { replyTo, answer: 'open', streamId, chunkIndex: 0, file: file.file }, offsets);
    return s;
  }
  reply(out, replyTo, {
    type: 'OpenStreamResponse',
    status: 'SUCCESS',
    streamId,
    chunkOffsets: offsets,
    message: '',
  });
  return s;
}

/** Reads chunk `chunkIndex` of a stream; completeRead answers the request with it. */
function startRead(
  s: WorkerMachineState,
  out: Outbox,
  request: Pick<
    Extract<OpPurpose, { kind: 'read' }>,
    'replyTo' | 'answer' | 'streamId' | 'chunkIndex' | 'file'
  >,
  offsets: readonly number[],
): void {
  const start = offsets[request.chunkIndex]!;
  const length = offsets[request.chunkIndex + 1]! - start;
  const op = takeId(s);
  out.effects.push({ kind: 'read', op, file: request.file, offset: start, length });
  setEntry(s.ops, op, { kind: 'read', ...request, length, issuedAt: out.now });
}

export function handleFetchChunk(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: FetchChunk,
): WorkerMachineState {
  if (!admitted(out, 'worker', s.config.release, envelope)) return s;
  const replyTo = replyToOf(envelope);
  const stream = s.streams.get(message.streamId);
  const file = stream === undefined ? undefined : getFile(s, stream.shuffleKey, stream.fileName);
  const start = stream?.chunkOffsets[message.chunkIndex];
  const end = stream?.chunkOffsets[message.chunkIndex + 1];
  if (stream === undefined || file === undefined || start === undefined || end === undefined) {
    const reason =
      stream === undefined
        ? `stream ${message.streamId} is not open on this worker (open it again)`
        : file === undefined
          ? `the file of stream ${message.streamId} is gone (its shuffle expired or was destroyed)`
          : `chunk ${message.chunkIndex} is out of range: the file has ${stream.chunkOffsets.length - 1} chunk(s)`;
    failFetch(out, replyTo, 'chunk', message.streamId, message.chunkIndex, 'REQUEST_FAILED', reason);
    return s;
  }
  startRead(
    s,
    out,
    { replyTo, answer: 'chunk', streamId: message.streamId, chunkIndex: message.chunkIndex, file: file.file },
    stream.chunkOffsets,
  );
  return s;
}

export function handleCloseStream(
  s: WorkerMachineState,
  out: Outbox,
  envelope: Envelope,
  message: CloseStream,
): WorkerMachineState {
  if (!admitted(out, 'worker', s.config.release, envelope)) return s;
  // An unknown id is fine: the stream may have ended by itself after its last chunk (a client that closes every
  // stream it read races with that end).
  setEntry(s.streams, message.streamId, undefined);
  return s;
}

export function completeRead(
  s: WorkerMachineState,
  out: Outbox,
  purpose: Extract<OpPurpose, { kind: 'read' }>,
  result: { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false; readonly error: IoError },
): WorkerMachineState {
  const stream = s.streams.get(purpose.streamId);
  if (!result.ok) {
    const status = result.error === 'TIMEOUT' ? 'FETCH_DATA_TIMEOUT' : 'REQUEST_FAILED';
    const reason = `reading the chunk failed (${result.error}); read it from the other copy if there is one`;
    // A failed open is of no use to the reader (it moves to the next copy): the stream ends with it.
    if (purpose.answer === 'open') setEntry(s.streams, purpose.streamId, undefined);
    failFetch(out, purpose.replyTo, purpose.answer, purpose.streamId, purpose.chunkIndex, status, reason);
    return s;
  }
  count(out, 'FetchChunkSuccessCount');
  if (stream !== undefined && purpose.chunkIndex === stream.chunkOffsets.length - 2) {
    setEntry(s.streams, purpose.streamId, undefined);
  }
  if (purpose.answer === 'open') {
    reply(
      out,
      purpose.replyTo,
      stream === undefined
        ? {
            type: 'OpenStreamResponse',
            status: 'REQUEST_FAILED',
            streamId: purpose.streamId,
            chunkOffsets: [],
            message:
              'the stream was closed while its first chunk was read (its shuffle expired or was destroyed)',
          }
        : {
            type: 'OpenStreamResponse',
            status: 'SUCCESS',
            streamId: purpose.streamId,
            chunkOffsets: stream.chunkOffsets,
            message: '',
            firstChunk: result.bytes,
          },
    );
    return recordLatency(s, purpose.file, 'fetch', out.now - purpose.issuedAt);
  }
  reply(out, purpose.replyTo, {
    type: 'ChunkData',
    status: 'SUCCESS',
    streamId: purpose.streamId,
    chunkIndex: purpose.chunkIndex,
    bytes: result.bytes,
    message: '',
  });
  return recordLatency(s, purpose.file, 'fetch', out.now - purpose.issuedAt);
}

/** A chunk that cannot be served, answered as the request expects: a ChunkData, or the OpenStream that asked for it. */
function failFetch(
  out: Outbox,
  to: ReplyTo,
  answer: 'chunk' | 'open',
  streamId: number,
  chunkIndex: number,
  status: 'REQUEST_FAILED' | 'FETCH_DATA_TIMEOUT',
  reason: string,
): void {
  count(out, 'FetchChunkFailCount');
  log(out, 'warn', 'worker.read.fetchFailed', { streamId, chunkIndex, status, reason });
  reply(
    out,
    to,
    answer === 'open'
      ? { type: 'OpenStreamResponse', status, streamId, chunkOffsets: [], message: reason }
      : { type: 'ChunkData', status, streamId, chunkIndex, bytes: new Uint8Array(0), message: reason },
  );
}
