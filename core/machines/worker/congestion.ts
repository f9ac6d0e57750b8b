import {
  assessCongestion,
  type CongestionWatermarks,
  type Watermarks,
  isUserCongested,
  needsCongestionCheck,
  noteCongestedReply,
  recordConsumed,
  recordProduced,
  type CongestionEvent,
} from '../../storage/index.ts';
import { adminReply, count, log, setTimer, type Outbox } from '../outbox.ts';
import type { WorkerMachineState } from './state.ts';

/**
 * The worker's side of congestion control (core/storage/congestion.ts decides): it feeds the bytes it accepts and
 * writes in, checks its disk buffer every `checkIntervalMs` while data flows or an episode lasts, logs one line at
 * each episode's start and end, and tells the push path whose batches are answered *_CONGESTED.
 */

export const CONGESTION_CHECK_TIMER = 'congestion-check';

/**
 * The machine owns its state (see takeId in ./state.ts): the congestion record is replaced in place, so that the
 * push path, which works on the state it was given, need not thread a new state through every settle.
 */
function setCongestion(s: WorkerMachineState, next: Partial<WorkerMachineState>): void {
  Object.assign(s as object, next);
}

/** `user` (an application) pushed `bytes` that the worker accepted. */
export function noteProduced(s: WorkerMachineState, out: Outbox, user: string, bytes: number): void {
  const config = s.config.congestion;
  if (config === undefined || bytes === 0) return;
  setCongestion(s, { congestion: recordProduced(s.congestion, config, user, bytes, out.now) });
  armCheck(s, out);
}

/** The disks wrote `bytes` of pushed data. */
export function noteConsumed(s: WorkerMachineState, out: Outbox, bytes: number): void {
  const config = s.config.congestion;
  if (config === undefined || bytes === 0) return;
  setCongestion(s, { congestion: recordConsumed(s.congestion, config, bytes, out.now) });
}

function armCheck(s: WorkerMachineState, out: Outbox): void {
  if (s.congestionCheckArmed || s.config.congestion === undefined) return;
  setTimer(out, CONGESTION_CHECK_TIMER, out.now + s.config.congestion.checkIntervalMs);
  setCongestion(s, { congestionCheckArmed: true });
}

/** Whether the batches of `user` are answered *_CONGESTED now (unless a split or a failure outranks it). */
export function userCongested(s: WorkerMachineState, user: string | undefined): boolean {
  return s.config.congestion !== undefined && user !== undefined && isUserCongested(s.congestion, user);
}

/** A batch of `user` was answered *_CONGESTED: the episode's summary counts it. */
export function noteCongested(s: WorkerMachineState, user: string): void {
  setCongestion(s, { congestion: noteCongestedReply(s.congestion, user) });
}

/** The check timer: measure, move the triggers across their watermarks, log an episode's start or end. */
export function onCongestionCheck(s: WorkerMachineState, out: Outbox): WorkerMachineState {
  const config = s.config.congestion;
  if (config === undefined) return { ...s, congestionCheckArmed: false };
  const { state, events } = assessCongestion(s.congestion, config, out.now, bufferedBytes(s));
  for (const event of events) logEpisode(out, event);
  const next: WorkerMachineState = { ...s, congestion: state, congestionCheckArmed: false };
  if (needsCongestionCheck(state)) armCheck(next, out);
  return next;
}

/** Bytes of pushed batches the worker accepted and its disks have not written yet (queued or being written). */
export function bufferedBytes(s: WorkerMachineState): number {
  let bytes = 0;
  for (const shuffle of s.shuffles.values()) {
    for (const file of shuffle.files.values()) {
      for (const task of file.queue) if (task.kind === 'write') bytes += task.bytes.length;
    }
  }
  return bytes;
}

function logEpisode(out: Outbox, event: CongestionEvent): void {
  if (event.kind === 'episodeStarted') {
    count(out, 'CongestionEpisodeCount');
    log(out, 'warn', 'worker.congestion.started', {
      cause: event.cause,
      congestedUsers: event.users.join(',') || 'none yet',
      note: 'pushes of the congested users are answered *_CONGESTED (their data is kept) until the load falls below the low watermarks',
    });
    return;
  }
  log(out, 'info', 'worker.congestion.ended', {
    durationMs: event.at - event.since,
    congestedReplies: event.congestedReplies,
    users: event.users.join(',') || 'none',
    peakBufferedBytes: event.peakBufferedBytes,
  });
}

function watermarksText(marks: Watermarks): string {
  const text = (n: number) => (n === Number.POSITIVE_INFINITY ? 'unlimited' : String(n));
  return `low ${text(marks.low)}, high ${text(marks.high)}`;
}

/**
 * The driver hands in watermarks resolved again from the dynamic configuration: they apply from the next check,
 * which runs at once (a lowered watermark may start an episode, a raised one end it). With congestion control off
 * they change nothing, and the answer says so.
 */
export function setCongestionWatermarks(
  s: WorkerMachineState,
  out: Outbox,
  watermarks: CongestionWatermarks,
  commandId: number | undefined,
): WorkerMachineState {
  const config = s.config.congestion;
  if (config === undefined) {
    adminReply(
      out,
      commandId,
      false,
      'congestion control is off (svc.worker.congestionControl.enabled): the watermarks change nothing',
    );
    return s;
  }
  log(out, 'info', 'worker.congestion.watermarks', {
    diskBuffer: watermarksText(watermarks.diskBuffer),
    userProduceSpeed: watermarksText(watermarks.userProduceSpeed),
    workerProduceSpeed: watermarksText(watermarks.workerProduceSpeed),
  });
  adminReply(out, commandId, true, 'congestion watermarks applied');
  const { diskBuffer, userProduceSpeed, workerProduceSpeed } = watermarks;
  const congestion = { ...config, diskBuffer, userProduceSpeed, workerProduceSpeed };
  const next: WorkerMachineState = { ...s, config: { ...s.config, congestion } };
  armCheck(next, out);
  return next;
}
