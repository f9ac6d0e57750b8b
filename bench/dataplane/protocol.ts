/**
 * The messages between bench/dataplane.bench.ts and its child processes (./client.ts, ./sink.ts), over the IPC
 * channel of `child_process.spawn` (JSON). Every request gets exactly one answer, or `failed`.
 */
import type { Workload } from './workload.ts';

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** Percentiles in milliseconds (a histogram's summary). */
export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

// ------------------------------------------------------------------ client (./client.ts)

export type ToClient =
  /** Starts an application (lifecycle manager) and an executor in the client process, against `master`. */
  | {
      readonly type: 'svc-init';
      readonly master: string;
      readonly conf: Readonly<Record<string, string>>;
    }
  /** Pushes a workload through svc's client library (`connectExecutor`), then waits for the shuffle's commit. */
  | {
      readonly type: 'svc-push';
      readonly shuffleId: number;
      readonly workload: Workload;
      readonly mapSlots: number;
      /** Unregister the shuffle once committed (a warm-up the measurement must not find on the workers). */
      readonly release?: boolean;
    }
  /**
   * Connects an executor only (no application) to another client process's application: a process whose memory is
   * one map's or one reducer's (the map-memory and read-memory scenarios).
   */
  | {
      readonly type: 'svc-executor';
      readonly app: AppCoordinates;
      readonly conf: Readonly<Record<string, string>>;
    }
  /**
   * Runs map attempts through the streaming writer, `slots` at a time, each writing `bytesPerMap` of records of
   * `recordBytes` round-robin over the shuffle's partitions, cut from one pool (no allocation per record) and
   * waiting for 'drain' whenever `write()` says false.
   */
  | {
      readonly type: 'svc-write-maps';
      readonly shuffleId: number;
      readonly maps: number;
      readonly partitions: number;
      readonly mapIds: readonly number[];
      readonly bytesPerMap: number;
      readonly recordBytes: number;
      readonly slots: number;
    }
  /** Reads one partition through `shuffle.reader(p).chunks()`, consuming each chunk before asking for the next. */
  | {
      readonly type: 'svc-read-partition';
      readonly shuffleId: number;
      readonly maps: number;
      readonly partitions: number;
      readonly partitionId: number;
    }
  /** Reads every partition of a pushed shuffle with `shuffle.read`, `slots` partitions at a time. */
  | {
      readonly type: 'svc-read';
      readonly shuffleId: number;
      readonly workload: Workload;
      readonly slots: number;
    }
  /** Streams the same framed bytes over bare sockets, partition p to `sinks[p % sinks.length]`. */
  | {
      readonly type: 'bare-push';
      readonly sinks: readonly Endpoint[];
      readonly workload: Workload;
    }
  /** Reads files from bare sinks' serve ports, over `slots` connections to each sink, one file at a time each. */
  | {
      readonly type: 'bare-read';
      readonly files: readonly { readonly server: Endpoint; readonly file: string }[];
      readonly slots: number;
    }
  | { readonly type: 'exit' };

/** What an executor needs to join an application (svc-init's answer). */
export interface AppCoordinates {
  readonly lifecycleManager: string;
  readonly appId: string;
  readonly secret?: string;
}

/** svc-write-maps' answer. */
export interface WriteResult {
  readonly type: 'wrote';
  readonly ms: number;
  readonly recordBytes: number;
  readonly records: number;
}

export interface PushResult {
  readonly type: 'pushed';
  readonly ms: number;
  /** Record bytes of the workload (what both sides move; throughputs are computed from it). */
  readonly recordBytes: number;
  /** Push messages (PushData and PushMergedData) sent, and batches in them. */
  readonly messages: number;
  readonly batches: number;
  /** Bytes of the stream written to sockets (bare) or of push payloads sent (svc; heads not counted). */
  readonly streamBytes: number;
  /** svc: round trip of each push request, send to response, in the client's event loop. */
  readonly rtt?: Percentiles;
  /** svc: the committed files, from the lifecycle manager's file group (bytes by where each file ended). */
  readonly committed?: {
    readonly files: number;
    readonly bytes: number;
    readonly bytesByStorage: Readonly<Record<string, number>>;
  };
  /** bare: what each sink acknowledged (its file, bytes and frames), by sink index. */
  readonly acks?: readonly SinkAck[];
}

export interface ReadResult {
  readonly type: 'read';
  readonly ms: number;
  /** svc: record bytes returned; bare: file bytes received. */
  readonly bytes: number;
  readonly records: number;
}

export type FromClient =
  | { readonly type: 'ready'; readonly pid: number }
  | { readonly type: 'svc-ready'; readonly pid: number; readonly app: AppCoordinates }
  | WriteResult
  | PushResult
  | ReadResult
  | { readonly type: 'failed'; readonly error: string };

// ------------------------------------------------------------------ sink (./sink.ts)

/**
 * discard: count and drop; keep: count, check (CRC-32) and copy every byte into memory faulted in at start (what a
 * memory tier must do at least: the floor for a worker's CPU and for a memory push's throughput); file: append to a
 * file.
 */
export type SinkMode = 'discard' | 'keep' | 'file';

export type ToSink =
  | {
      readonly type: 'sink-init';
      readonly mode: SinkMode;
      /** Where `file` mode writes, and what the serve port reads files from (relative names). */
      readonly dir: string;
      /** The piece size of served files (svc.shuffle.chunk.size). */
      readonly chunkBytes: number;
    }
  /** Relays every stream the push port receives to this relay port of another sink (replication). */
  | { readonly type: 'relay-to'; readonly relay: Endpoint }
  | { readonly type: 'exit' };

export interface SinkPorts {
  readonly push: number;
  readonly relay: number;
  readonly serve: number;
}

export type FromSink =
  | { readonly type: 'ready'; readonly pid: number }
  | { readonly type: 'sink-ready'; readonly pid: number; readonly ports: SinkPorts }
  | { readonly type: 'relaying' }
  | { readonly type: 'failed'; readonly error: string };

/** A sink's answer at the end of one pushed stream (a JSON line on the stream's own socket). */
export interface SinkAck {
  readonly bytes: number;
  readonly frames: number;
  /** The file the stream went to (relative to the sink's dir), in `file` mode. */
  readonly file?: string;
  /** What the relay peer acknowledged, when the sink relayed the stream. */
  readonly relayed?: SinkAck;
}
