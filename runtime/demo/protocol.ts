// What the demo driver and its executor processes say to each other: one JSON object per line, on the executor's
// stdin (tasks) and stdout (answers). The client library logs on the same stdout, so every line of this protocol
// starts with its own marker field and any other line is an executor log line.
import type { PartitionDigest, DatasetSpec } from './records.ts';

export const MARKER = 'svcDemo';

/** Where an executor's shuffle client connects, as the driver's application gives it. */
export interface ClientSettings {
  readonly lifecycleManager: string;
  readonly appId: string;
  readonly release: string;
  readonly conf: Readonly<Record<string, string>>;
  readonly executorId: string;
  /**
   * The application's secret with authentication on (--auth): handed over on the executor's stdin, as a Spark
   * driver hands its executors what they need; never on a command line, never printed.
   */
  readonly secret?: string;
}

export type ToExecutor =
  /** First line: what to generate, and the application to join (none for the process that only computes digests). */
  | { readonly type: 'init'; readonly spec: DatasetSpec; readonly client?: ClientSettings }
  | {
      readonly type: 'map';
      readonly task: number;
      readonly shuffleId: number;
      readonly mapId: number;
      readonly attemptId: number;
    }
  | { readonly type: 'reduce'; readonly task: number; readonly shuffleId: number; readonly partition: number }
  /** The expected digest of every partition, from the generator alone. */
  | { readonly type: 'expect'; readonly task: number }
  | { readonly type: 'exit' };

export type FromExecutor =
  | { readonly type: 'ready'; readonly pid: number }
  /** A map's record bytes the workers acknowledged so far. */
  | { readonly type: 'progress'; readonly task: number; readonly bytes: number }
  | {
      readonly type: 'mapDone';
      readonly task: number;
      readonly outcome: 'won' | 'lost';
      readonly bytes: number;
      readonly records: number;
      readonly ms: number;
      /** The executor process's peak resident memory so far (its maxRSS), measured in the executor. */
      readonly peakRssBytes: number;
    }
  | {
      readonly type: 'reduceDone';
      readonly task: number;
      readonly digest: PartitionDigest;
      readonly largestGroup: number;
      readonly ms: number;
    }
  | {
      readonly type: 'expectDone';
      readonly task: number;
      readonly digests: PartitionDigest[];
      readonly ms: number;
    }
  | { readonly type: 'failed'; readonly task: number; readonly error: string }
  /** The executor cannot go on (a bad init, a client that could not start). */
  | { readonly type: 'fatal'; readonly error: string };

export function encodeLine(message: ToExecutor | FromExecutor): string {
  return `${JSON.stringify({ [MARKER]: 1, ...message })}\n`;
}

/** The protocol message of a line, or undefined for any other line (a log line). */
export function decodeLine<T extends ToExecutor | FromExecutor>(line: string): T | undefined {
  if (!line.startsWith(`{"${MARKER}":1`)) return undefined;
  try {
    const parsed = JSON.parse(line) as Record<string, unknown>;
    delete parsed[MARKER];
    return typeof parsed.type === 'string' ? (parsed as unknown as T) : undefined;
  } catch {
    return undefined;
  }
}
