/**
 * Self time by function from a V8 CPU profile (`node --cpu-prof`), restricted to a time window: the profile's
 * timestamps are CLOCK_MONOTONIC microseconds, the clock of process.hrtime, so a window taken in the benchmark's
 * process selects the samples another process took during a measurement.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { sourceOfCompiled } from './compiled.ts';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** A window in CLOCK_MONOTONIC microseconds. */
export interface Window {
  readonly fromUs: number;
  readonly toUs: number;
}

export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export interface FunctionTime {
  /** `name (file:line)`, the file relative to the repository when inside it. */
  readonly name: string;
  /** What part of the system the function belongs to (see areaOf). */
  readonly area: string;
  readonly selfMs: number;
  /** Share of the window's busy (non-idle) samples. */
  readonly share: number;
}

export interface ProfileSummary {
  readonly file: string;
  readonly windowMs: number;
  /** Sampled time the process was not idle, in the window. */
  readonly busyMs: number;
  readonly top: readonly FunctionTime[];
  readonly areas: readonly { readonly area: string; readonly selfMs: number; readonly share: number }[];
}

/** The profile file a process with this pid wrote into `dir` (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile). */
export function profileFileOf(dir: string, pid: number): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const name = names.find((n) => n.endsWith('.cpuprofile') && n.split('.')[3] === String(pid));
  return name === undefined ? undefined : path.join(dir, name);
}

export function summariseProfile(
  file: string,
  window: Window | undefined,
  repoRoot: string,
  topN = 25,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) byId.set(node.id, node);
  const self = new Map<number, number>();
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i += 1) {
    time += profile.timeDeltas[i] ?? 0;
    if (window !== undefined && (time < window.fromUs || time > window.toUs)) continue;
    // A sample's time is the interval that ends at it: the next delta (or the same one at the end).
    const weight = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + weight);
  }
  const byFunction = new Map<string, { area: string; us: number }>();
  let busyUs = 0;
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busyUs += us;
    const name = functionName(frame, repoRoot);
    const entry = byFunction.get(name) ?? { area: areaOf(frame, repoRoot), us: 0 };
    entry.us += us;
    byFunction.set(name, entry);
  }
  const areas = new Map<string, number>();
  for (const { area, us } of byFunction.values()) areas.set(area, (areas.get(area) ?? 0) + us);
  const share = (us: number) => (busyUs === 0 ? 0 : us / busyUs);
  return {
    file,
    windowMs:
      window === undefined
        ? (profile.endTime - profile.startTime) / 1000
        : (window.toUs - window.fromUs) / 1000,
    busyMs: busyUs / 1000,
    top: [...byFunction.entries()]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, topN)
      .map(([name, { area, us }]) => ({ name, area, selfMs: us / 1000, share: share(us) })),
    areas: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, selfMs: us / 1000, share: share(us) })),
  };
}

function relative(url: string, repoRoot: string): string {
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  const source = sourceOfCompiled(file);
  if (source !== undefined) return source;
  return file.startsWith(repoRoot + path.sep) ? file.slice(repoRoot.length + 1) : file;
}

function functionName(frame: ProfileNode['callFrame'], repoRoot: string): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  // tsx's transformed TypeScript puts functions on line 1 of its output, and the compiler's lines are not the
  // source's (./compiled.ts): a line number there would mislead.
  const compiled = sourceOfCompiled(frame.url) !== undefined;
  const line = frame.lineNumber > 0 && !compiled ? `:${frame.lineNumber + 1}` : '';
  return `${name} (${relative(frame.url, repoRoot)}${line})`;
}

/**
 * The part of the system a function belongs to: a folder of the repository (two levels: `runtime/transport`,
 * `core/machines`), a package, Node.js itself (`node:<module>`), or V8's pseudo-frames (`(garbage collector)`,
 * `(program)`: native work outside JavaScript, mostly system calls and the C++ side of streams).
 */
export function areaOf(frame: ProfileNode['callFrame'], repoRoot: string): string {
  const url = frame.url;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) {
    const module = url.slice('node:'.length).replace(/^internal\//, '');
    return `node:${module.split('/')[0]}`;
  }
  const file = relative(url, repoRoot);
  const packageAt = file.lastIndexOf('node_modules/');
  if (packageAt >= 0) {
    const parts = file.slice(packageAt + 'node_modules/'.length).split('/');
    return `package ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : (parts[0] ?? file);
}
