// The soak's stand-in for systemd or Kubernetes beside a group of masters (docs/high-availability.md, "Running a
// group"): a member that exits, with code 75 after it lost the lead or killed by the injector, is started again on
// its host and port, and the soak's log says so. Only the soak's end stops it; nothing else decides about members.
import type { LocalCluster } from '../cluster/local-cluster.ts';
import type { ServerProcess } from '../cluster/server-process.ts';

/** systemd's RestartSec: a pause before the restart, so that a member failing at start does not spin. */
const RESTART_DELAY_MS = 1_000;

/** One restart the supervisor did: which member, how its process had ended, and when (ms from the soak's start). */
export interface MemberRestart {
  readonly member: string;
  readonly exitCode: number | null;
  readonly atMs: number;
  /** The restarted process; undefined when the restart failed (`error` says why). */
  readonly process?: ServerProcess;
  readonly error?: string;
}

export class MasterSupervisor {
  readonly restarts: MemberRestart[] = [];
  private stopped = false;
  /** Restarts under way (a member's exit seen, its new process not yet up): the soak's end waits for them. */
  private readonly restarting = new Set<Promise<void>>();
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly cluster: LocalCluster,
    private readonly clock: () => number,
    private readonly print: (line: string) => void,
  ) {}

  /** Watches every member's current process. */
  start(): void {
    for (const id of this.cluster.memberIds) this.watch(id, this.cluster.member(id));
  }

  /** The restarts of member `id` so far. */
  restartsOf(id: string): MemberRestart[] {
    return this.restarts.filter((restart) => restart.member === id);
  }

  /**
   * Resolves with member `id`'s restart number `count` (from 1) once it happened, or rejects after `timeoutMs`
   * naming what it waited for.
   */
  async restarted(id: string, count: number, timeoutMs: number): Promise<MemberRestart> {
    const found = (): MemberRestart | undefined => this.restartsOf(id)[count - 1];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const restart = found();
      if (restart !== undefined) return restart;
      const left = deadline - Date.now();
      if (left <= 0 || this.stopped)
        throw new Error(`the supervisor did not restart ${id} (restart ${count}) within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  /** Stops restarting (the soak's end: the cluster's stop must not be undone) and waits for restarts under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await Promise.all([...this.restarting]);
  }

  private wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const waiter of waiters) waiter();
  }

  private watch(id: string, process: ServerProcess): void {
    void process.exited().then((code) => {
      if (this.stopped) return;
      const restart = this.restart(id, process, code);
      this.restarting.add(restart);
      void restart.finally(() => this.restarting.delete(restart));
    });
  }

  private async restart(id: string, process: ServerProcess, code: number | null): Promise<void> {
    this.print(
      `[chaos] ${formatClock(this.clock())} supervisor: master ${id} (pid ${String(process.pid)}) exited ` +
        `${code === null || code < 0 ? 'on a signal' : `with code ${code}`}; restarting it`,
    );
    await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
    if (this.stopped) return;
    try {
      const again = await this.cluster.restartMember(id);
      this.restarts.push({ member: id, exitCode: code, atMs: this.clock(), process: again });
      this.print(
        `[chaos] ${formatClock(this.clock())} supervisor: master ${id} started again (pid ${String(again.pid)})`,
      );
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      this.restarts.push({ member: id, exitCode: code, atMs: this.clock(), error: message });
      this.print(`[chaos] supervisor: master ${id} did not start again: ${message}`);
    }
    this.wake();
    // Whatever became of the new process (up, or exited before it was), its exit is the next restart's cue.
    this.watch(id, this.cluster.member(id));
  }
}

function formatClock(ms: number): string {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
