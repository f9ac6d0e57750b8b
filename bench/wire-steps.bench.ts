/**
 * A worker's wire steps in one process, by their CPU time (issue 37; docs/performance.md, "What was built"): what
 * every pushed batch and every shuffle's large control messages cost between the socket and the machine, without
 * sockets, a driver or other processes, so that a loaded two-core machine moves it little. Run it from two trees
 * alternately to compare them:
 *
 *   npm run bench -- wire-steps [--rounds 9] [--only merged,scan,reserve,commit,files]
 *
 * - `merged`: a merged push of 128 batches decoded from its frame (control part and payload views).
 * - `scan`: merged pushes of 4 KiB batches read in 64 KiB socket reads into a body of their own, each batch
 *   checksummed as it lands (runtime/wire/batch-checksums.ts, the native CRC-32), then each batch's checksum recalled
 *   as the core's check asks for it.
 * - `reserve`, `commit`: a ReserveSlots and a CommitFilesResponse of 10,000 partitions decoded from their frames.
 * - `files`: the memory tier's side of a shuffle of 10,000 partitions (runtime/storage/tier-storage.ts), as the
 *   driver issues it: 10,000 creates in one batch, two writes of 1,500 B per file in batches of 128 (a merged push's
 *   batches, each to another file), 10,000 flushes in one batch (the commit), then a delete per file.
 *
 * Reported only (exit 0): the least and the median of the rounds; compare the least, which interference only raises.
 */
import { parseArgs } from 'node:util';
import type { PartitionLocation, StorageInfo, WorkerId } from '../core/domain/index.ts';
import { encodeBatchFrame, FRAME_CRC_OFFSET, FRAME_HEADER_BYTES } from '../core/protocol/batch-frame.ts';
import { crc32 } from '../core/protocol/crc32.ts';
import type { Message } from '../core/protocol/messages.ts';
import type { BatchableIo, FileRef } from '../core/machines/effects.ts';
import { useNativeChecksum } from '../runtime/driver/native-checksum.ts';
import { MemoryPool } from '../runtime/storage/memory-pool.ts';
import { TierStorage } from '../runtime/storage/tier-storage.ts';
import { forgetChecksums } from '../runtime/wire/batch-checksums.ts';
import { decodeFrame, encodeEnvelope } from '../runtime/wire/frames.ts';
import { InPlaceFrameReader } from '../runtime/wire/in-place-reader.ts';
import { concatBytes } from '../runtime/wire/testing.ts';

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  options: {
    rounds: { type: 'string', default: '9' },
    only: { type: 'string', default: 'merged,scan,reserve,commit,files' },
  },
});
const rounds = Number(flags.rounds);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`--rounds '${flags.rounds}' is not a whole number`);

/** `message`'s frame as a socket delivers it (length prefix included). */
function frameOf(message: Message): Uint8Array {
  return concatBytes(encodeEnvelope({ from: 'client-1', to: 'worker-1', requestId: 7, message }));
}

/** `message`'s frame body (without its length prefix), as a connection hands it to decodeFrame. */
function frameBody(message: Message): Uint8Array {
  return frameOf(message).subarray(4);
}

function mergedPush(batches: number, batchBytes: number): Message {
  return {
    type: 'PushMergedData',
    shuffleKey: 'app-1-0',
    mode: 'PRIMARY',
    mapId: 3,
    attemptId: 0,
    batches: Array.from({ length: batches }, (_, i) => {
      const ids = { shuffleId: 0, mapId: 3, attemptId: 0, batchId: i, partitionId: i * 37, epoch: 0 };
      const payload = new Uint8Array(batchBytes - FRAME_HEADER_BYTES).map((_, j) => (j * 7 + i) & 0xff);
      return { partitionId: ids.partitionId, epoch: 0, batchId: i, payload: encodeBatchFrame(ids, payload) };
    }),
  };
}

const worker: WorkerId = {
  host: '10.0.0.17',
  rpcPort: 40101,
  pushPort: 40102,
  fetchPort: 40103,
  replicatePort: 40104,
};
const storage: StorageInfo = { type: 'MEMORY', mountPoint: '', availableTypes: 0 };
const locations: PartitionLocation[] = Array.from({ length: 10_000 }, (_, partitionId) => ({
  partitionId,
  epoch: 0,
  worker,
  mode: 'PRIMARY',
  storage,
}));

interface Step {
  readonly unit: 'ns per batch' | 'ms per message' | 'ms per shuffle';
  /** Runs the step once over its input; returns how many units (batches, messages, shuffles) it went through. */
  readonly run: () => number;
  readonly describe: string;
}

function decodeStep(message: Message, describe: string): Step {
  const body = frameBody(message);
  return {
    unit: 'ms per message',
    describe,
    run: () => {
      for (let i = 0; i < 4; i += 1) decodeFrame(body);
      return 4;
    },
  };
}

function mergedStep(): Step {
  const body = frameBody(mergedPush(128, 4096));
  return {
    unit: 'ns per batch',
    describe: 'a merged push of 128 batches of 4 KiB decoded',
    run: () => {
      let batches = 0;
      for (let i = 0; i < 200; i += 1) {
        const decoded = decodeFrame(body);
        if (decoded.kind === 'envelope' && decoded.envelope.message.type === 'PushMergedData')
          batches += decoded.envelope.message.batches.length;
      }
      return batches;
    },
  };
}

function scanStep(): Step {
  const frame = frameOf(mergedPush(128, 4096));
  const body = frame.subarray(4);
  // Where each batch's payload lies in the body, and its header's CRC: what the core's check asks the CRC for.
  const checks: { readonly start: number; readonly end: number; readonly header: number }[] = [];
  let at = 5 + new DataView(body.buffer, body.byteOffset).getUint32(1);
  while (at < body.byteLength) {
    const end = at + FRAME_HEADER_BYTES + new DataView(body.buffer, body.byteOffset + at).getUint32(32);
    checks.push({ start: at + FRAME_HEADER_BYTES, end, header: crc32(body, 0, at, at + FRAME_CRC_OFFSET) });
    at = end;
  }
  // One body lent again for every frame, as a worker's pool lends it (runtime/wire/receive-bodies.ts).
  let lent: Uint8Array | undefined;
  const reader = new InPlaceFrameReader(64 * 1024 * 1024, crc32);
  reader.takeBodiesFrom({
    take: (length) => {
      if (lent?.byteLength !== length) lent = new Uint8Array(length);
      forgetChecksums(lent.buffer);
      return lent;
    },
  });
  return {
    unit: 'ns per batch',
    describe: 'merged pushes of 4 KiB batches read in 64 KiB reads, checksummed as they land, then checked',
    run: () => {
      let batches = 0;
      for (let push = 0; push < 64; push += 1) {
        for (let offset = 0; offset < frame.byteLength;) {
          const region = reader.region();
          const count = Math.min(region.byteLength, frame.byteLength - offset, 64 * 1024);
          region.set(frame.subarray(offset, offset + count));
          offset += count;
          for (const received of reader.received(count)) {
            for (const { start, end, header } of checks) {
              crc32(received, header, start, end);
              batches += 1;
            }
          }
        }
      }
      return batches;
    },
  };
}

function filesStep(): Step {
  const partitions = 10_000;
  const payload = new Uint8Array(1500).fill(7);
  // The worker's pool, touched at start as a worker's is: each shuffle's blocks go back to it at its deletes.
  const storage = new TierStorage({
    disks: [],
    memoryPool: new MemoryPool({ capacityBytes: 64 * 1024 * 1024, preTouch: true }),
    onIoDone: () => undefined, // the worker's metrics observe every operation
  });
  let shuffle = 0;
  return {
    unit: 'ms per shuffle',
    describe:
      'a shuffle of 10,000 memory files created, written twice in batches of 128, flushed and deleted',
    run: () => {
      shuffle += 1;
      // A new FileRef per file and shuffle, as the core makes them at each reserve.
      const files: FileRef[] = Array.from({ length: partitions }, (_, p) => ({
        tier: 'MEMORY',
        mountPoint: '',
        id: `app-1-${shuffle}/${p}-0-0`,
      }));
      let op = 0;
      const batch = (kind: 'createFile' | 'flush', of: readonly FileRef[]): BatchableIo[] =>
        of.map((file) => ({ kind, op: (op += 1), file }));
      void storage.runBatch(batch('createFile', files));
      for (let pass = 0; pass < 2; pass += 1) {
        for (let at = 0; at < partitions; at += 128) {
          const writes = files.slice(at, at + 128).map((file): BatchableIo => ({
            kind: 'write',
            op: (op += 1),
            file,
            bytes: payload,
          }));
          void storage.runBatch(writes);
        }
      }
      void storage.runBatch(batch('flush', files));
      for (const file of files) void storage.delete(file);
      return 1;
    },
  };
}

const STEPS: Readonly<Record<string, () => Step>> = {
  merged: mergedStep,
  scan: scanStep,
  reserve: () =>
    decodeStep(
      {
        type: 'ReserveSlots',
        appId: 'app-1',
        shuffleId: 0,
        primaries: locations,
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: true,
      },
      'a ReserveSlots of 10,000 primaries decoded',
    ),
  commit: () =>
    decodeStep(
      {
        type: 'CommitFilesResponse',
        status: 'SUCCESS',
        committedPrimaries: locations.map(({ partitionId }) => ({
          uniqueId: `${partitionId}-0`,
          mode: 'PRIMARY' as const,
          storage,
          bytes: 6144,
          chunkOffsets: [0, 6144],
        })),
        committedReplicas: [],
        failedPrimaryIds: [],
        failedReplicaIds: [],
        message: '',
      },
      'a CommitFilesResponse of 10,000 files decoded',
    ),
  files: filesStep,
};

useNativeChecksum(); // as every driver does
const chosen = flags.only.split(',').map((name) => {
  const make = Object.hasOwn(STEPS, name) ? STEPS[name] : undefined;
  if (make === undefined) throw new Error(`--only: no step '${name}' (${Object.keys(STEPS).join(', ')})`);
  return { name, step: make() };
});
/**
 * A collection before each step when the runner exposes it (bench/run.ts), so that no step inherits another's
 * garbage; none between rounds: a heap just collected hands its memory back, and the next round's first writes to it
 * cost more than the step (docs/performance.md, "Fresh memory").
 */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`wire-steps: ${rounds} rounds; CPU, the least (median) of the rounds`);
for (const { name, step } of chosen) {
  collect();
  for (let i = 0; i < 5; i += 1) step.run(); // warm-up: the code optimised, the heap's memory touched
  const figures: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const before = process.cpuUsage();
    const units = step.run();
    const used = process.cpuUsage(before);
    const micros = used.user + used.system;
    figures.push(step.unit === 'ns per batch' ? (micros * 1000) / units : micros / 1000 / units);
  }
  const digits = step.unit === 'ns per batch' ? 0 : 2;
  console.log(
    `  ${name.padEnd(8)} ${Math.min(...figures).toFixed(digits)} (${median(figures).toFixed(digits)}) ` +
      `${step.unit}: ${step.describe}`,
  );
}
