// Drives the core's leadership machine (core/ha/leadership.ts) with real I/O: its store requests go to etcd
// (./etcd-requests.ts) and their results come back as inputs, its `wakeAt` is one timer, its clock is the process's
// monotonic clock. Every decision (when to campaign, to act, to step down, what to write) is the machine's; this
// class only carries them out and tells its owner (docs/high-availability.md, "What the driver does").
import { performance } from 'node:perf_hooks';
import type { Fence } from '../../core/ha/fencing.ts';
import { storeChanges } from '../../core/ha/key-layout.ts';
import type { KeyWrite } from '../../core/machines/master/layout.ts';
import {
  actingAsLeader,
  haStep,
  initialHaState,
  leaderHint,
  type HaConfig,
  type HaEffect,
  type HaInput,
  type HaState,
} from '../../core/ha/leadership.ts';
import type { StoreRequest, StoreResult } from '../../core/ha/store.ts';
import type { Logger } from '../log.ts';

/** What serves the machine's store requests: exactly one result per request (./etcd-requests.ts). */
export interface StoreRequests {
  serve(request: StoreRequest, answer: (result: StoreResult) => void): void;
  close(): void;
}

/** What the owner of the driver (a master process, a test) does on the machine's decisions. */
export interface HaDriverEvents {
  /** Act as leader from now: start the master machine on `recovered` (the restart path). */
  startActing(recovered: ReadonlyMap<string, string>, fence: Fence): void;
  /** Stop acting now; `abandoned` persists are never confirmed. */
  stopActing(reason: string, abandoned: readonly number[]): void;
  /** The state in the store cannot be read or written: no master can lead on it. */
  fatal(reason: string): void;
  /** Who leads, as the election reported it. */
  leaderIs?(value: string | null, revision: number): void;
}

export class HaDriver {
  private state: HaState;
  private timer: NodeJS.Timeout | undefined;
  private nextPersist = 1;
  private readonly persists = new Map<number, () => void>();
  /** Revokes sent by the last step: a planned stop waits for them. */
  private revokes: Promise<void>[] = [];
  private closed = false;

  constructor(
    config: HaConfig,
    private readonly requests: StoreRequests,
    private readonly logger: Logger,
    private readonly events: HaDriverEvents,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.state = initialHaState(config);
  }

  start(): void {
    this.step({ kind: 'start' });
  }

  /** Whether this master may act as leader now: asked before the master machine is handed anything. */
  get acting(): boolean {
    return actingAsLeader(this.state, this.now());
  }

  /** Whom to name in a "not leader" answer (the election's last report, never this master); null: unknown. */
  get leader(): string | null {
    return leaderHint(this.state);
  }

  get phase(): HaState['phase']['kind'] {
    return this.state.phase.kind;
  }

  /**
   * Writes the keys the master persisted (its `persist{coordination}` effects of one write, under
   * MASTER_STATE_PREFIX; null deletes) as fenced keys under the state prefix; resolves once they are in etcd. A
   * persist abandoned by a step-down never settles: what waits on it is never acknowledged. Throws for a key
   * outside the master's state.
   */
  persist(writes: readonly KeyWrite[]): Promise<void> {
    const id = this.nextPersist++;
    const changes = storeChanges(this.state.config.statePrefix, writes);
    return new Promise((resolve) => {
      this.persists.set(id, resolve);
      this.step({ kind: 'persist', id, changes });
    });
  }

  /** A planned stop: gives leadership up and waits (within the request timeout) for etcd to end the lease. */
  async resign(): Promise<void> {
    this.revokes = [];
    this.step({ kind: 'resign' });
    await Promise.all(this.revokes);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.requests.close();
  }

  private step(input: HaInput): void {
    if (this.closed) return;
    const { state, effects } = haStep(this.state, input, this.now());
    this.state = state;
    for (const effect of effects) this.execute(effect);
  }

  /**
   * One timer, replaced by each `wakeAt`. A timer can fire a fraction of a millisecond before the monotonic clock
   * reaches `at`, and the machine asks for the same time only once: it is set again rather than ticking early.
   */
  private wakeAt(at: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        if (this.now() < at) this.wakeAt(at);
        else this.step({ kind: 'tick' });
      },
      Math.max(0, Math.ceil(at - this.now())),
    );
  }

  private execute(effect: HaEffect): void {
    switch (effect.kind) {
      case 'store': {
        const request = effect.request;
        const answered = new Promise<void>((resolve) =>
          this.requests.serve(request, (result) => {
            resolve();
            this.step({ kind: 'result', result });
          }),
        );
        if (request.kind === 'leaseRevoke') this.revokes.push(answered);
        return;
      }
      case 'wakeAt':
        this.wakeAt(effect.at);
        return;
      case 'startActing':
        this.events.startActing(effect.recovered, effect.fence);
        return;
      case 'stopActing':
        for (const id of effect.abandoned) this.persists.delete(id);
        this.events.stopActing(effect.reason, effect.abandoned);
        return;
      case 'persisted':
        for (const id of effect.ids) {
          const done = this.persists.get(id);
          this.persists.delete(id);
          done?.();
        }
        return;
      case 'leaderIs':
        this.events.leaderIs?.(effect.value, effect.revision);
        return;
      case 'fatal':
        this.events.fatal(effect.reason);
        return;
      case 'log': {
        const reason = effect.fields.reason;
        const message = typeof reason === 'string' ? `${effect.event}: ${reason}` : effect.event;
        this.logger[effect.level]({ event: effect.event, ...effect.fields }, message);
        return;
      }
    }
  }
}
