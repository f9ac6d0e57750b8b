/**
 * The messages between bench/master-load.bench.ts and its child processes (./generator.ts, ./echo.ts), over the IPC
 * channel of `child_process.spawn` (JSON; bench/dataplane/children.ts). Every request gets exactly one answer, or
 * `failed`.
 */
import type { Percentiles } from '../dataplane/protocol.ts';

export type { Percentiles };

/** The shape of the load, the same against the master and the echo server. */
export interface LoadShape {
  readonly workers: number;
  /** The workers' heartbeat interval (the default: a quarter of svc.master.heartbeat.worker.timeout, 120 s). */
  readonly heartbeatIntervalMs: number;
  readonly apps: number;
  /** The applications' heartbeat interval (svc.client.application.heartbeatInterval, 10 s). */
  readonly appHeartbeatIntervalMs: number;
  readonly partitions: number;
  readonly replicate: boolean;
  /** Shuffles an application keeps registered; past it, its oldest is unregistered when a new one registers. */
  readonly liveShufflesPerApp: number;
}

export type ToGenerator =
  /** Opens a connection per simulated worker, registers each and starts their heartbeats (random phases). */
  | { readonly type: 'workers'; readonly port: number; readonly shape: LoadShape }
  /** Counts so far (the benchmark reads the server's CPU at the same moment). */
  | { readonly type: 'counts' }
  /**
   * Every application connects and registers, then all register their first shuffle at the same moment (a burst);
   * their heartbeats start.
   */
  | { readonly type: 'burst' }
  /**
   * For `seconds`, each application registers a new shuffle every `shuffleIntervalMs` (random phases), unregistering
   * its oldest past `liveShufflesPerApp`.
   */
  | { readonly type: 'steady'; readonly seconds: number; readonly shuffleIntervalMs: number }
  | { readonly type: 'exit' };

export interface Counts {
  /** Heartbeats answered since the workers registered. */
  readonly heartbeats: number;
  readonly appHeartbeats: number;
  readonly registerShuffles: number;
  /** Answers that were not a success (against the master; the echo server echoes requests back). */
  readonly refusals: number;
  /** The first refusal's text, if any. */
  readonly firstRefusal?: string;
}

export type FromGenerator =
  | { readonly type: 'ready' }
  | { readonly type: 'workers-registered'; readonly ms: number; readonly counts: Counts }
  | { readonly type: 'counts'; readonly counts: Counts; readonly heartbeatRtt: Percentiles }
  | {
      readonly type: 'registered';
      /** RequestSlots round trips (the master's part of RegisterShuffle), in milliseconds. */
      readonly registerShuffle: Percentiles;
      readonly counts: Counts;
    }
  | { readonly type: 'exiting' }
  | { readonly type: 'failed'; readonly error: string };

export type ToEcho = { readonly type: 'port' } | { readonly type: 'exit' };

export type FromEcho =
  | { readonly type: 'ready' }
  | { readonly type: 'port'; readonly port: number }
  | { readonly type: 'exiting' }
  | { readonly type: 'failed'; readonly error: string };
