// What the soak knows of a group of masters, read from the members' own words: which one leads now (its log lines,
// confirmed by its GET /api/v1/masters), whether two ever acted as leader at once (every member's log, read back
// from its files at the end), and whether a failover lost a registered shuffle (the leaders' GET /api/v1/shuffles).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LocalCluster } from '../cluster/local-cluster.ts';
import type { LogLine, ServerProcess } from '../cluster/server-process.ts';

/** How long a management request of the soak may take: a frozen or cut-off member answers nothing. */
const REQUEST_TIMEOUT_MS = 3_000;

export interface Leader {
  readonly id: string;
  readonly process: ServerProcess;
  /** Its management interface, from its `listening` line. */
  readonly httpUrl: string | undefined;
  /** The term of its `ha.leading` line (the election key's create revision). */
  readonly term: number;
}

/**
 * The members whose current process says it leads: it logged `ha.leading` and `listening`, and neither stepped down
 * nor exited since. Normally one; a frozen leader still counts here (it cannot say otherwise) beside its successor.
 */
export function leadersNow(cluster: LocalCluster): Leader[] {
  return cluster.memberIds.flatMap((id) => {
    const process = cluster.member(id);
    if (!process.running) return [];
    const leading = process.seen((line) => line.event === 'ha.leading').at(-1);
    if (leading === undefined) return [];
    if (process.seen((line) => line.event === 'ha.stepDown' || line.event === 'ha.exit').length > 0)
      return [];
    if (process.seen((line) => line.event === 'listening').length === 0) return [];
    return [{ id, process, httpUrl: cluster.memberHttpUrl(id), term: Number(leading.term) }];
  });
}

/** GET `url` + `apiPath` as JSON within REQUEST_TIMEOUT_MS; undefined when no answer, or not 200. */
export async function getJson(url: string | undefined, apiPath: string): Promise<unknown> {
  if (url === undefined) return undefined;
  try {
    const response = await fetch(`${url}${apiPath}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (response.status !== 200) return undefined;
    return await response.json();
  } catch {
    return undefined;
  }
}

/** The leader a member's GET /api/v1/masters names, or undefined when it does not answer. */
export async function leaderNamedBy(url: string | undefined): Promise<string | undefined> {
  const body = (await getJson(url, '/api/v1/masters')) as { leader?: { id?: string } } | undefined;
  return body?.leader?.id;
}

/**
 * The one leader, its own GET /api/v1/masters agreeing that it leads: the fault's target. Waits (polling its state,
 * up to `timeoutMs`) while there is none or more than one (a failover is ending), so that a fault never strikes a
 * member that was only believed to lead.
 */
export async function theLeader(cluster: LocalCluster, timeoutMs: number): Promise<Leader> {
  const deadline = Date.now() + timeoutMs;
  let seen = 'no member leads';
  for (;;) {
    const leaders = leadersNow(cluster);
    if (leaders.length === 1) {
      const [leader] = leaders;
      const named = await leaderNamedBy(leader!.httpUrl);
      if (named === leader!.id) return leader!;
      seen = `${leader!.id} leads by its log, its GET /api/v1/masters names ${named ?? 'nobody'}`;
    } else if (leaders.length > 1) seen = `${leaders.map((l) => l.id).join(' and ')} both lead by their logs`;
    if (Date.now() >= deadline) throw new Error(`no single leader within ${timeoutMs} ms: ${seen}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Resolves with the first member other than `old`'s process that leads (its `ha.leading` line), polling. */
export async function successorOf(
  cluster: LocalCluster,
  old: ServerProcess,
  timeoutMs: number,
): Promise<Leader> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const next = leadersNow(cluster).find((leader) => leader.process !== old);
    if (next !== undefined) return next;
    if (Date.now() >= deadline)
      throw new Error(`no other member led within ${timeoutMs} ms of the fault on ${old.options.name}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * One tenure as the log shows it: from `ha.leading` to the last line its master machine wrote, before or after its
 * step-down (a process that writes one after it is acting past its term).
 */
export interface Tenure {
  /** The log file (one per process start). */
  readonly file: string;
  readonly term: number;
  readonly fromMs: number;
  /** The last master-machine line (`master.*`) of the process; `fromMs` when it wrote none. */
  readonly lastActMs: number;
  /** How the tenure ended: its `ha.stepDown` reason, or the end of the log (killed, or the soak's end). */
  readonly ended: string;
}

function parseLines(file: string): LogLine[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((text) => {
      if (!text.startsWith('{')) return [];
      try {
        return [JSON.parse(text) as LogLine];
      } catch {
        return [];
      }
    });
}

const timeOf = (line: LogLine): number => Date.parse(String(line.time));

/**
 * Every tenure of every master whose log is under `logDir` (`master*.log`, one file per process start; a process
 * leads once at most, it exits when it stops). A master's machine acts only while its own leadership machine says it
 * may (docs/high-availability.md, "What the driver does"); its `master.*` lines are what it did as leader. A deposed
 * leader's last act falls before its successor's `ha.leading`, whether it was killed, cut off (it stops on its own
 * clock before its lease can end) or frozen (its first step once resumed is the step-down).
 */
export function tenures(logDir: string): Tenure[] {
  const all: Tenure[] = [];
  for (const name of readdirSync(logDir).filter((file) => /^master.*\.log$/.test(file))) {
    let tenure: { term: number; fromMs: number; lastActMs: number; ended: string } | undefined;
    for (const line of parseLines(path.join(logDir, name))) {
      if (line.event === 'ha.leading' && tenure === undefined)
        tenure = {
          term: Number(line.term),
          fromMs: timeOf(line),
          lastActMs: timeOf(line),
          ended: 'its log ends (killed, or the soak ended)',
        };
      else if (tenure === undefined) continue;
      else if (line.event === 'ha.stepDown') tenure.ended = String(line.reason);
      else if (line.event?.startsWith('master.') === true)
        tenure.lastActMs = Math.max(tenure.lastActMs, timeOf(line));
    }
    if (tenure !== undefined) all.push({ file: name, ...tenure });
  }
  return all.sort((a, b) => a.fromMs - b.fromMs);
}

/**
 * The ways `all` shows two masters acting as leader at once: a tenure that started before an earlier one's last act
 * (in time, on the machine's one clock), or a term that does not grow with time.
 */
export function overlappingTenures(all: readonly Tenure[]): string[] {
  const found: string[] = [];
  for (const [index, later] of all.entries()) {
    for (const earlier of all.slice(0, index)) {
      if (earlier.lastActMs >= later.fromMs)
        found.push(
          `${earlier.file} (term ${earlier.term}) still acted as leader at ${new Date(earlier.lastActMs).toISOString()}, ` +
            `after ${later.file} (term ${later.term}) led at ${new Date(later.fromMs).toISOString()}`,
        );
      if (earlier.term >= later.term)
        found.push(
          `${later.file} led with term ${later.term} after ${earlier.file} had led with term ${earlier.term}`,
        );
    }
  }
  return found;
}

/** What one failover carried over: the shuffles the old leader listed last, and which the new one did not. */
export interface Failover {
  readonly from: string;
  readonly to: string;
  /** When the new leader's list was read (ms from the soak's start). */
  readonly atMs: number;
  readonly carried: number;
  /** `<appId>-<shuffleId>` listed by the old leader, not by the new one. */
  readonly missing: readonly string[];
}

/**
 * Reads the leader's registered shuffles (GET /api/v1/shuffles) every `everyMs`, and at each change of leader
 * compares the new leader's first list with the old one's last: every shuffle must have been carried over unless
 * its application ended in between (the soak's check, which knows the jobs, decides that).
 */
export class ShuffleWatch {
  readonly failovers: Failover[] = [];
  private last: { leader: Leader; shuffles: readonly string[] } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(
    private readonly cluster: LocalCluster,
    private readonly clock: () => number,
    private readonly everyMs = 1_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.read(), this.everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const leaders = leadersNow(this.cluster);
      if (leaders.length !== 1) return;
      const leader = leaders[0]!;
      const body = (await getJson(leader.httpUrl, '/api/v1/shuffles')) as
        { shuffleIds?: string[] } | undefined;
      if (body?.shuffleIds === undefined) return;
      const last = this.last;
      if (last !== undefined && last.leader.process !== leader.process) {
        const now = new Set(body.shuffleIds);
        this.failovers.push({
          from: last.leader.id,
          to: leader.id,
          atMs: this.clock(),
          carried: last.shuffles.filter((id) => now.has(id)).length,
          missing: last.shuffles.filter((id) => !now.has(id)),
        });
      }
      this.last = { leader, shuffles: body.shuffleIds };
    } finally {
      this.reading = false;
    }
  }
}
