import { type BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import type { PartitionLocation } from '../../core/domain/partition.ts';
import { STATUS_CODES } from '../../core/domain/status.ts';
import type { WorkerId } from '../../core/domain/worker.ts';
import type { RequestSlotsResponse } from '../../core/protocol/messages.ts';
import {
  bytesFieldSize,
  elementSize,
  int32FieldSize,
  named,
  NOT_HOT,
  reverse,
  utf8,
  wireNumber,
  type BodyWriter,
  readTag,
  wireTypeOf,
} from './hand-codec.ts';
import {
  locationSize,
  nestedEnd,
  readLocation,
  readWorker,
  Sizes,
  encodedWorker,
  writeLocation,
} from './slot-codec.ts';

/**
 * RequestSlotsResponse by hand: the master's answer to a RegisterShuffle carries every slot it offered (2,000
 * locations for a replicated shuffle of 1,000 partitions), and encoding it through the schema's reflection was the
 * largest share of the master's encoding under load (docs/performance.md, "A busy master"). Under ./hot-codec.ts's
 * rules: the bytes are exactly `toBinary`'s, and whatever the reader does not expect is left to the schema's decoder.
 */

const STATUS_NAMES = reverse(STATUS_CODES);

type WorkerResource = RequestSlotsResponse['workerResource'][number];
type Unplaced = RequestSlotsResponse['unplaced'][number];

function resourceSize(resource: WorkerResource, sizes: Sizes): number {
  const index = sizes.reserve();
  let size =
    elementSize(encodedWorker(resource.worker).byteLength) + bytesFieldSize(utf8(resource.networkLocation));
  for (const location of resource.primaries) size += elementSize(locationSize(location, sizes));
  for (const location of resource.replicas) size += elementSize(locationSize(location, sizes));
  return sizes.set(index, size);
}

function unplacedSize(entry: Unplaced): number {
  return int32FieldSize(entry.partitionId) + bytesFieldSize(utf8(entry.reason));
}

export function requestSlotsResponseWriter(message: RequestSlotsResponse): BodyWriter {
  const status = wireNumber(STATUS_CODES, message.status);
  const text = utf8(message.message);
  const sizes = new Sizes();
  let size = int32FieldSize(status) + bytesFieldSize(text);
  for (const resource of message.workerResource) size += elementSize(resourceSize(resource, sizes));
  for (const entry of message.unplaced) size += elementSize(unplacedSize(entry));
  return {
    size,
    write(out) {
      out.int32Field(1, status);
      for (const resource of message.workerResource) {
        out.nested(2, sizes.next());
        out.element(1, encodedWorker(resource.worker));
        out.bytesField(2, utf8(resource.networkLocation));
        for (const location of resource.primaries) writeLocation(out, 3, location, sizes);
        for (const location of resource.replicas) writeLocation(out, 4, location, sizes);
      }
      for (const entry of message.unplaced) {
        out.nested(3, unplacedSize(entry));
        out.int32Field(1, entry.partitionId);
        out.bytesField(2, utf8(entry.reason));
      }
      out.bytesField(4, text);
    },
  };
}

function readResource(reader: BinaryReader, end: number): WorkerResource {
  let worker: WorkerId | undefined;
  let networkLocation = '';
  const primaries: PartitionLocation[] = [];
  const replicas: PartitionLocation[] = [];
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (type !== WireType.LengthDelimited) throw NOT_HOT;
    // A worker sent twice is merged by protobuf: left to the schema's decoder.
    if (number === 1 && worker === undefined) worker = readWorker(reader, nestedEnd(reader));
    else if (number === 2) networkLocation = reader.string(true);
    else if (number === 3) primaries.push(readLocation(reader, nestedEnd(reader), false));
    else if (number === 4) replicas.push(readLocation(reader, nestedEnd(reader), false));
    else throw NOT_HOT;
  }
  if (reader.pos !== end || worker === undefined) throw NOT_HOT;
  return { worker, networkLocation, primaries, replicas };
}

function readUnplaced(reader: BinaryReader, end: number): Unplaced {
  let partitionId = 0;
  let reason = '';
  while (reader.pos < end) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) partitionId = reader.int32();
    else if (number === 2 && type === WireType.LengthDelimited) reason = reader.string(true);
    else throw NOT_HOT;
  }
  if (reader.pos !== end) throw NOT_HOT;
  return { partitionId, reason };
}

export function readRequestSlotsResponse(reader: BinaryReader): RequestSlotsResponse {
  let status = 0;
  const workerResource: WorkerResource[] = [];
  const unplaced: Unplaced[] = [];
  let message = '';
  while (reader.pos < reader.len) {
    const tag = readTag(reader);
    const number = tag >>> 3;
    const type = wireTypeOf(tag);
    if (number === 1 && type === WireType.Varint) status = reader.int32();
    else if (type !== WireType.LengthDelimited) throw NOT_HOT;
    else if (number === 2) workerResource.push(readResource(reader, nestedEnd(reader)));
    else if (number === 3) unplaced.push(readUnplaced(reader, nestedEnd(reader)));
    else if (number === 4) message = reader.string(true);
    else throw NOT_HOT;
  }
  return {
    type: 'RequestSlotsResponse',
    status: named(STATUS_NAMES, status),
    workerResource,
    unplaced,
    message,
  };
}
