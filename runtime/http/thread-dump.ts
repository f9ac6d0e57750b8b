import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { EventLoopDelay, ThreadStack, ThreadStackResponse } from './projections/types.ts';

/**
 * GET /api/v1/thread_dump, the Node.js way. A JVM lists its threads; a Node.js process runs JavaScript on one
 * thread per isolate, so the dump is the diagnostic report (process.report.getReport()): the main thread's
 * JavaScript stack, each worker thread's, and the libuv handles the event loop waits on (as one more entry, named
 * "libuv"), plus the event loop's delay since the server started (perf_hooks.monitorEventLoopDelay).
 */

interface ReportHandle {
  readonly type?: string;
  readonly is_active?: boolean;
  readonly is_referenced?: boolean;
  readonly fd?: number;
  readonly localEndpoint?: { readonly ip4?: string; readonly ip6?: string; readonly port?: number } | null;
  readonly remoteEndpoint?: { readonly ip4?: string; readonly ip6?: string; readonly port?: number } | null;
  readonly firesInMsFromNow?: number;
  readonly filename?: string;
}

/** The parts of a diagnostic report (Node.js report version 3 and later) the dump reads. */
export interface DiagnosticReport {
  readonly header?: { readonly threadId?: number | null };
  readonly javascriptStack?: { readonly stack?: readonly string[] };
  readonly libuv?: readonly ReportHandle[];
  readonly workers?: readonly DiagnosticReport[];
}

const REPORT_FRAME = /node:internal\/process\/report/;

function stackOf(report: DiagnosticReport): string[] {
  return (report.javascriptStack?.stack ?? [])
    .map((frame) => frame.trim())
    .filter((frame) => frame.length > 0 && !REPORT_FRAME.test(frame));
}

function endpoint(point: ReportHandle['localEndpoint']): string | undefined {
  if (point === undefined || point === null) return undefined;
  return `${point.ip4 ?? point.ip6 ?? '?'}:${point.port ?? '?'}`;
}

/** One libuv handle as a line: `tcp active ref fd=21 127.0.0.1:9098 -> 127.0.0.1:51234`. */
export function handleText(handle: ReportHandle): string {
  const parts = [
    handle.type ?? 'handle',
    handle.is_active === true ? 'active' : 'inactive',
    handle.is_referenced === true ? 'ref' : 'unref',
  ];
  if (handle.fd !== undefined && handle.fd >= 0) parts.push(`fd=${handle.fd}`);
  const local = endpoint(handle.localEndpoint);
  const remote = endpoint(handle.remoteEndpoint);
  if (local !== undefined) parts.push(remote === undefined ? local : `${local} -> ${remote}`);
  if (handle.type === 'timer' && handle.firesInMsFromNow !== undefined && handle.is_active === true) {
    parts.push(`fires in ${handle.firesInMsFromNow} ms`);
  }
  if (handle.filename !== undefined) parts.push(handle.filename);
  return parts.join(' ');
}

/** The dump's threads from a report. Pure (tests give it a report of their own). */
export function threadStacksOf(report: DiagnosticReport): ThreadStack[] {
  const mainId = report.header?.threadId ?? 0;
  const threads: ThreadStack[] = [
    {
      threadId: mainId,
      threadName: 'main',
      threadState: 'RUNNABLE',
      stackTrace: stackOf(report),
      inNative: false,
    },
    {
      threadId: mainId,
      threadName: 'libuv',
      threadState: 'WAITING',
      stackTrace: (report.libuv ?? []).map(handleText),
      inNative: true,
    },
  ];
  for (const [index, worker] of (report.workers ?? []).entries()) {
    threads.push({
      threadId: worker.header?.threadId ?? index + 1,
      threadName: `worker-${worker.header?.threadId ?? index + 1}`,
      threadState: 'RUNNABLE',
      stackTrace: stackOf(worker),
      inNative: false,
    });
  }
  return threads;
}

const NS_PER_MS = 1e6;

function ms(ns: number): number {
  return Number.isFinite(ns) ? Math.round((ns / NS_PER_MS) * 1000) / 1000 : 0;
}

/** The event loop's delay, watched from the server's start to its close. */
export class EventLoopMonitor {
  private readonly histogram: IntervalHistogram;

  constructor(private readonly resolutionMs = 20) {
    this.histogram = monitorEventLoopDelay({ resolution: resolutionMs });
    this.histogram.enable();
  }

  snapshot(): EventLoopDelay {
    const h = this.histogram;
    const sampled = h.count > 0;
    return {
      minMs: sampled ? ms(h.min) : 0,
      maxMs: sampled ? ms(h.max) : 0,
      meanMs: sampled ? ms(h.mean) : 0,
      stddevMs: sampled ? ms(h.stddev) : 0,
      p50Ms: sampled ? ms(h.percentile(50)) : 0,
      p90Ms: sampled ? ms(h.percentile(90)) : 0,
      p99Ms: sampled ? ms(h.percentile(99)) : 0,
      resolutionMs: this.resolutionMs,
    };
  }

  close(): void {
    this.histogram.disable();
  }
}

let networkExcluded = false;

/** The dump of this process now. */
export function threadDump(monitor: EventLoopMonitor): ThreadStackResponse {
  if (!networkExcluded) {
    // Resolving the host names of sockets would block the event loop on DNS for every connection.
    (process.report as { excludeNetwork?: boolean }).excludeNetwork = true;
    networkExcluded = true;
  }
  const report = process.report.getReport() as DiagnosticReport;
  return { threadStacks: threadStacksOf(report), eventLoopDelay: monitor.snapshot() };
}
