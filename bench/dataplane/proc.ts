/**
 * What Linux says of another process: CPU time from /proc/<pid>/stat (utime + stime, every thread, in clock ticks)
 * and resident memory from /proc/<pid>/status (VmRSS now, VmHWM its peak). Read from outside, so that the measured
 * process runs unchanged.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * The fields of a /proc stat file from field 3 (state) on, or undefined when the process is gone: those after the
 * command, which may hold spaces, start after its closing parenthesis.
 */
function statFields(file: string): string[] | undefined {
  try {
    const stat = readFileSync(file, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** User and system CPU seconds the process has used so far (every thread); NaN when it is gone. */
export function cpuSeconds(pid: number): { user: number; system: number } {
  const fields = statFields(`/proc/${pid}/stat`);
  if (fields === undefined) return { user: Number.NaN, system: Number.NaN };
  return { user: Number(fields[11]) / clockTicks(), system: Number(fields[12]) / clockTicks() };
}

/**
 * CPU seconds (user + system) of the process's main thread alone (/proc/<pid>/task/<pid>/stat): in node, the event
 * loop's. The rest of a process's CPU is its other threads': V8's (optimising compilation, concurrent and parallel
 * collection) and libuv's pool (file system calls). NaN when the process is gone.
 */
export function mainThreadCpuSeconds(pid: number): number {
  const fields = statFields(`/proc/${pid}/task/${pid}/stat`);
  if (fields === undefined) return Number.NaN;
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/**
 * Seconds the process's main thread (node's event loop) has waited on a run queue so far: runnable, but another
 * thread had the CPU (/proc/<pid>/task/<pid>/schedstat, its second field, in nanoseconds). Every such wait is
 * event-loop delay the process's own code did not cause; on a machine with fewer cores than busy threads it is most
 * of it (docs/performance.md, "What bounds each row", the worker's event-loop p99). NaN when the process is gone or the kernel keeps no
 * scheduler statistics.
 */
export function mainThreadWaitSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(' ');
    const waited = Number(fields[1]);
    return fields.length >= 2 && Number.isFinite(waited) ? waited / 1e9 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/**
 * Minor page faults of the process so far (every thread, from /proc/<pid>/stat): pages touched for the first time
 * since they were mapped. On the VMs these figures come from, a fault costs several microseconds, so memory that is
 * given back and mapped again shows here (docs/performance.md, "Fresh memory"). NaN when the process is gone.
 */
export function minorFaultsOf(pid: number): number {
  const fields = statFields(`/proc/${pid}/stat`);
  return fields === undefined ? Number.NaN : Number(fields[7]);
}

/** VmRSS and VmHWM in bytes (0 when the process is gone). */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string): number => {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return match === null ? 0 : Number(match[1]) * 1024;
    };
    return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Context switches of the process so far (every thread): voluntary (it waited) and involuntary (preempted). */
export function switchesOf(pid: number): { voluntary: number; involuntary: number } {
  let voluntary = 0;
  let involuntary = 0;
  try {
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${thread}/status`, 'utf8');
      voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    }
  } catch {
    // gone
  }
  return { voluntary, involuntary };
}

/** Samples the resident memory of some processes every `intervalMs` and keeps each one's peak. */
export class RssSampler {
  private readonly peaks = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pids: readonly number[],
    intervalMs = 50,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    for (const pid of this.pids) {
      const { rss } = memoryOf(pid);
      this.peaks.set(pid, Math.max(this.peaks.get(pid) ?? 0, rss));
    }
  }

  /** Stops sampling; the peak resident bytes of each process, by pid. */
  stop(): Map<number, number> {
    clearInterval(this.timer);
    this.sample();
    return this.peaks;
  }
}

export interface MachineInfo {
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memTotalBytes: number;
  readonly memAvailableBytes: number;
  readonly node: string;
  readonly kernel: string;
}

export function machineInfo(): MachineInfo {
  const meminfo = safeRead('/proc/meminfo');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(meminfo);
    return match === null ? 0 : Number(match[1]) * 1024;
  };
  const cpuinfo = safeRead('/proc/cpuinfo');
  return {
    nproc: Number(safeExec('nproc')) || 0,
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memTotalBytes: field('MemTotal'),
    memAvailableBytes: field('MemAvailable'),
    node: process.version,
    kernel: safeRead('/proc/sys/kernel/osrelease').trim(),
  };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function safeExec(command: string): string {
  try {
    return execFileSync(command, { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
