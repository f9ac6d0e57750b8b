import { shuffleKey } from '../../core/domain/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';
import { RequestLog } from './requests.ts';

interface WorkerHistory {
  /** Incremented at every start; a commit remembers the generation that made it. */
  generation: number;
  /** The newest generation that ended without a graceful shutdown (crash, immediate exit); -1 if none. */
  lastUngracefulEnd: number;
  gracefulRequested: boolean;
  /** This generation was told to leave (an admin exit, or a worker event that ends in Exit), gracefully or not. */
  exitRequested: boolean;
  /** Committed files: `shuffleKey|uniqueId|mode` → generation of the commit. */
  readonly committed: Map<string, number>;
  /** Shuffles this worker was told to drop (destroyed or expired): their files may legitimately be gone. */
  readonly released: Set<string>;
}

/** The master's worker events that send a worker on its way to Exit (DecommissionThenIdle stops at Idle). */
const LEAVING_EVENTS: ReadonlySet<string> = new Set(['Graceful', 'Immediately', 'Decommission']);

/**
 * read-committed and committed-survives-graceful-restart, from the messages alone: a worker's CommitFilesResponse
 * says what it committed, its OpenStreamResponse says what it serves. Serving a file it never reported committed is
 * a violation; refusing a file it committed, after nothing but graceful restarts and no instruction to drop the
 * shuffle, is one too (the planted bug 'restart-forgets-committed' shows up exactly so).
 */
export function committedReads(isWorker: (node: NodeId) => boolean): Observer {
  const requests = new RequestLog(new Set(['CommitFiles', 'OpenStream']));
  const workers = new Map<NodeId, WorkerHistory>();
  const history = (node: NodeId): WorkerHistory => {
    let entry = workers.get(node);
    if (!entry) {
      entry = {
        generation: 0,
        lastUngracefulEnd: -1,
        gracefulRequested: false,
        exitRequested: false,
        committed: new Map(),
        released: new Set(),
      };
      workers.set(node, entry);
    }
    return entry;
  };

  return {
    onStart(node) {
      if (!isWorker(node)) return;
      const entry = history(node);
      entry.generation += 1;
      // Requests to leave belong to the generation that received them: one cut short by a crash must not make the
      // next generation's ungraceful end count as graceful.
      entry.gracefulRequested = false;
      entry.exitRequested = false;
    },
    onCrash(node) {
      if (isWorker(node)) history(node).lastUngracefulEnd = history(node).generation;
    },
    onExit(node) {
      if (!isWorker(node)) return;
      const entry = history(node);
      if (!entry.gracefulRequested) entry.lastUngracefulEnd = entry.generation;
      entry.gracefulRequested = false;
    },
    inputs: ['admin', 'WorkerHeartbeatResponse', 'DestroySlots'],
    onInput(node: NodeId, input: Input) {
      if (!isWorker(node)) return;
      const entry = history(node);
      if (input.kind === 'admin' && input.command.type === 'exit') {
        entry.gracefulRequested = input.command.exitType === 'GRACEFUL';
        entry.exitRequested = true;
      }
      if (input.kind !== 'receive') return;
      const message = input.envelope.message;
      if (message.type === 'WorkerHeartbeatResponse') {
        for (const key of message.expiredShuffleKeys) entry.released.add(key);
        if (message.workerEvent === 'Graceful') entry.gracefulRequested = true;
        // Immediately is accepted on the way out too (docs/core/lifecycle.md): a drain it interrupts ends in an
        // immediate exit, which drops the worker's data (swarm seed 9152). An Immediately the worker refuses (it is
        // already exiting) leaves the exit graceful; counting it ungraceful only makes the check miss that one exit.
        if (message.workerEvent === 'Immediately') entry.gracefulRequested = false;
        if (LEAVING_EVENTS.has(message.workerEvent)) entry.exitRequested = true;
      } else if (message.type === 'DestroySlots') {
        entry.released.add(shuffleKey(message.appId, message.shuffleId));
      }
    },
    effects: [...requests.kept, 'CommitFilesResponse', 'OpenStreamResponse'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      requests.record(node, effect);
      if (!isWorker(node) || effect.kind !== 'send') return;
      const entry = history(node);
      const message = effect.message;
      if (message.type === 'CommitFilesResponse') {
        const commit = requests.find(effect.to, effect.inReplyTo, 'CommitFiles');
        if (!commit) return;
        const key = shuffleKey(commit.appId, commit.shuffleId);
        for (const file of [...message.committedPrimaries, ...message.committedReplicas]) {
          const id = `${key}|${file.uniqueId}|${file.mode}`;
          if (!entry.committed.has(id)) entry.committed.set(id, entry.generation);
        }
      } else if (message.type === 'OpenStreamResponse') {
        const open = requests.find(effect.to, effect.inReplyTo, 'OpenStream');
        if (!open) return;
        const id = `${open.shuffleKey}|${open.uniqueId}|${open.mode}`;
        const committedIn = entry.committed.get(id);
        if (message.status === 'SUCCESS' && committedIn === undefined) {
          world.fail({
            invariant: 'read-committed',
            node,
            detail: `served ${open.mode} file ${open.uniqueId} of ${open.shuffleKey} to ${effect.to}, but never reported it committed`,
          });
          return;
        }
        // A worker told to leave refuses reads once it is InExit or Exit, by design, until it restarts: the reader
        // tries again. The window is short, unless the master's acknowledgement of the exit report is lost (a one-way
        // partition: up to EXIT_REPORT_WAIT_MS; swarm seed 12805). After a graceful exit its files must be served
        // once it is back; an immediate exit drops them, and a read may reach the worker between that drop and its
        // end, when the generation is not yet counted ungraceful (swarm seed 53878). Either way the check belongs
        // to the next generation.
        const leaving = entry.exitRequested && message.message.includes('serves no more reads');
        if (
          message.status === 'OPEN_STREAM_FAILED' &&
          !leaving &&
          committedIn !== undefined &&
          committedIn < entry.generation &&
          entry.lastUngracefulEnd < committedIn &&
          !entry.released.has(open.shuffleKey)
        ) {
          world.fail({
            invariant: 'committed-survives-graceful-restart',
            node,
            detail:
              `after ${entry.generation - committedIn} graceful restart(s) the worker refuses ${open.mode} file ` +
              `${open.uniqueId} of ${open.shuffleKey}, which it had committed: ${message.message}`,
          });
          return;
        }
      }
    },
  };
}
