import type { StatusCode, WorkerKey } from '../domain/index.ts';
import { isPushFailure, PUSH_FAILURE_CAUSES } from './causes.ts';

/**
 * The lifecycle manager's view of which workers to avoid (reference §3.5): workers it excluded itself (with the cause
 * and the time), workers the master reports as excluded or unknown, and workers shutting down. Revive candidates
 * skip both sets.
 */
export interface WorkerStatusView {
  readonly excluded: ReadonlyMap<WorkerKey, ExcludedWorker>;
  readonly shuttingDown: ReadonlySet<WorkerKey>;
}

export interface ExcludedWorker {
  readonly cause: StatusCode;
  readonly since: number;
}

/** What the master's answer to the application heartbeat says about workers. */
export interface MasterWorkerReport {
  /** Excluded by the master (automatically or manually). */
  readonly excluded: readonly WorkerKey[];
  /** Not registered with the master. */
  readonly unknown: readonly WorkerKey[];
  /** Shutting down or decommissioning. */
  readonly shuttingDown: readonly WorkerKey[];
}

export function emptyWorkerStatus(): WorkerStatusView {
  return { excluded: new Map(), shuttingDown: new Set() };
}

/**
 * Causes that say something about the worker itself rather than one request: they outlive the master's view and are
 * kept until `svc.client.excludedWorker.expireTimeout` (default 180 s). Every other entry is dropped as soon as the
 * master no longer lists the worker.
 */
export function isLastingCause(cause: StatusCode): boolean {
  if (
    cause === 'WORKER_UNRESPONSIVE' ||
    cause === 'COMMIT_FILE_EXCEPTION' ||
    cause === 'NO_AVAILABLE_WORKING_DIR' ||
    cause === 'RESERVE_SLOTS_FAILED'
  ) {
    return true;
  }
  if (!isPushFailure(cause)) return false;
  const { kind } = PUSH_FAILURE_CAUSES[cause];
  return kind === 'createConnection' || kind === 'connection' || kind === 'timeout';
}

/** Excludes a worker for `cause`; WORKER_SHUTDOWN instead marks it shutting down. A repeat keeps the first time. */
export function excludeWorker(
  view: WorkerStatusView,
  worker: WorkerKey,
  cause: StatusCode,
  now: number,
): WorkerStatusView {
  if (cause === 'WORKER_SHUTDOWN') {
    if (view.shuttingDown.has(worker)) return view;
    return { ...view, shuttingDown: new Set([...view.shuttingDown, worker]) };
  }
  if (view.excluded.has(worker)) return view;
  return { ...view, excluded: new Map([...view.excluded, [worker, { cause, since: now }]]) };
}

/** Lifts exclusions, e.g. for the workers of a location a revive just reserved successfully. */
export function releaseWorkers(view: WorkerStatusView, workers: readonly WorkerKey[]): WorkerStatusView {
  if (!workers.some((worker) => view.excluded.has(worker))) return view;
  const excluded = new Map(view.excluded);
  for (const worker of workers) excluded.delete(worker);
  return { ...view, excluded };
}

/** Whether an entry was recorded for a lasting cause and is now older than `expireTimeoutMs`. */
function hasExpired(entry: ExcludedWorker, now: number, expireTimeoutMs: number): boolean {
  return isLastingCause(entry.cause) && now - entry.since >= expireTimeoutMs;
}

/**
 * Drops the lasting entries older than `expireTimeoutMs` (reference §3.5), and returns which workers they were.
 * Called before every decision that reads the view, not only when a heartbeat answer arrives: otherwise an expired
 * exclusion would keep a worker out of revives until the next answer, and forever while the master is unreachable.
 */
export function expireExclusions(
  view: WorkerStatusView,
  now: number,
  expireTimeoutMs: number,
): { readonly view: WorkerStatusView; readonly expired: readonly WorkerKey[] } {
  const expired = [...view.excluded]
    .filter(([, entry]) => hasExpired(entry, now, expireTimeoutMs))
    .map(([worker]) => worker);
  if (expired.length === 0) return { view, expired };
  const excluded = new Map(view.excluded);
  for (const worker of expired) excluded.delete(worker);
  return { view: { ...view, excluded }, expired };
}

/**
 * Applies the master's heartbeat answer: lasting entries stay until they expire (`now - since >= expireTimeoutMs`),
 * other entries stay only while the master lists the worker; the master's excluded and unknown workers are added
 * (as WORKER_EXCLUDED and WORKER_UNKNOWN) unless already present; the shutting-down set becomes the master's.
 * An expired lasting entry the master still lists is re-confirmed: it becomes the master's entry (its cause, from
 * now), so that it stays exactly as long as the master lists it instead of expiring again between two answers.
 */
export function applyMasterReport(
  view: WorkerStatusView,
  report: MasterWorkerReport,
  now: number,
  expireTimeoutMs: number,
): WorkerStatusView {
  const masterCause = new Map<WorkerKey, StatusCode>();
  for (const worker of report.excluded) masterCause.set(worker, 'WORKER_EXCLUDED');
  for (const worker of report.unknown)
    if (!masterCause.has(worker)) masterCause.set(worker, 'WORKER_UNKNOWN');
  const excluded = new Map<WorkerKey, ExcludedWorker>();
  for (const [worker, entry] of view.excluded) {
    const cause = masterCause.get(worker);
    if (hasExpired(entry, now, expireTimeoutMs)) {
      if (cause !== undefined) excluded.set(worker, { cause, since: now });
    } else if (isLastingCause(entry.cause) || cause !== undefined) {
      excluded.set(worker, entry);
    }
  }
  for (const [worker, cause] of masterCause) {
    if (!excluded.has(worker)) excluded.set(worker, { cause, since: now });
  }
  return { excluded, shuttingDown: new Set(report.shuttingDown) };
}
