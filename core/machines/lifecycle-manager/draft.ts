import type { WorkerStatusView } from '../../client/index.ts';
import type { ShuffleId } from '../../domain/index.ts';
import type { Message } from '../../protocol/messages.ts';
import type { ReviveCandidate } from '../../revive/index.ts';
import type { Rng } from '../../rng.ts';
import type { NodeId } from '../effects.ts';
import { newOutbox, type Outbox } from '../outbox.ts';
import { ask, type RequestTable } from '../client/requests.ts';
import type { LifecycleManagerConfig } from './config.ts';
import type {
  AppRegistration,
  HeldRevive,
  LifecycleManagerState,
  LmRequest,
  LmShuffle,
  ParkedFileGroup,
  Reservation,
  ReviveCall,
} from './state.ts';

/**
 * The state as one step works on it, with the step's outbox and random source. Handlers change it in place; the
 * step turns it back into a state. Under the machine contract (core/machines/machine.ts) the step owns the state it
 * was given, so the draft's maps are the state's own maps, not copies: copying four maps on every step was the
 * lifecycle manager's largest cost (docs/core.md, Performance).
 */
export interface Draft {
  readonly config: LifecycleManagerConfig;
  app: AppRegistration;
  requests: RequestTable<LmRequest>;
  workers: WorkerStatusView;
  clusterWorkers: readonly ReviveCandidate[];
  readonly shuffles: Map<ShuffleId, LmShuffle>;
  unregisteredShuffles: ReadonlySet<ShuffleId>;
  interruptedShuffles: ReadonlyMap<ShuffleId, string>;
  readonly reservations: Map<number, Reservation>;
  nextReservationId: number;
  readonly reviveCalls: Map<number, ReviveCall>;
  nextCallId: number;
  readonly parkedFileGroups: Map<number, ParkedFileGroup>;
  nextParkId: number;
  reviveTimerArmed: boolean;
  revivesAwaitingReport: ReadonlyMap<ShuffleId, ReadonlyMap<number, HeldRevive>>;
  revivesReported: ReadonlySet<string>;
  unreported: { readonly bytes: number; readonly files: number };
  readonly out: Outbox;
  readonly rng: Rng;
}

export function openDraft(state: LifecycleManagerState, now: number, rng: Rng): Draft {
  // Every one of these maps was created by this machine (initialLifecycleManagerState); the state types expose them
  // read-only so that only the machine's own step changes them.
  // New fields before the spread: V8 (Node 20) builds `{ ...state, out }` through a slow path, ~1 µs per field.
  return {
    out: newOutbox(now, rng),
    rng,
    ...state,
    shuffles: state.shuffles as Map<ShuffleId, LmShuffle>,
    reservations: state.reservations as Map<number, Reservation>,
    reviveCalls: state.reviveCalls as Map<number, ReviveCall>,
    parkedFileGroups: state.parkedFileGroups as Map<number, ParkedFileGroup>,
  };
}

export function closeDraft(draft: Draft): LifecycleManagerState {
  const { out: _out, rng: _rng, ...state } = draft;
  return state;
}

export function updateShuffle(d: Draft, shuffleId: ShuffleId, change: Partial<LmShuffle>): LmShuffle {
  const shuffle = { ...d.shuffles.get(shuffleId)!, ...change };
  d.shuffles.set(shuffleId, shuffle);
  return shuffle;
}

/** Sends a request with its timeout timer. */
export function request(d: Draft, to: NodeId, message: Message, purpose: LmRequest, attempt = 1): void {
  d.requests = ask(d.requests, d.out, { to, message, purpose, attempt }, d.config.requestTimeoutMs);
}
