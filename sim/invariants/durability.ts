import { shuffleKey } from '../../core/domain/ids.ts';
import type { AdminCommand, Effect, Input, NodeId } from '../../core/machines/effects.ts';
import { appKey, MASTER_STATE_PREFIX, workerEntryKey } from '../../core/machines/master/layout.ts';
import { fileNameFor } from '../../core/machines/worker/files.ts';
import { decodeShuffleRecord, recoveryKey } from '../../core/machines/worker/recovery.ts';
import type { Observer, World } from '../world/world.ts';
import { RequestLog } from './requests.ts';

/**
 * acknowledged-survives-crash: what a node acknowledged is in its durable store from the moment the
 * acknowledgement leaves it, so that a crash of the node (which keeps exactly the confirmed writes, world.ts)
 * cannot take it back. Covered: a master's application registrations (RegisterApplication SUCCESS) and manual
 * exclusions and their removals (a successful `excludeWorkers` answer), a worker's committed disk and DFS files
 * (CommitFilesResponse; memory files do not survive a restart by design). Checked when the acknowledgement leaves,
 * and again for everything acknowledged when its node crashes.
 *
 * A node may later change what it acknowledged by its own decision (an application expires, an operator lifts an
 * exclusion, a shuffle is destroyed): a fact is dropped once the node persists a value that contradicts it, which
 * is what the node then promises instead.
 */
export function acknowledgedSurvivesCrash(
  isMaster: (node: NodeId) => boolean,
  isWorker: (node: NodeId) => boolean,
): Observer {
  const requests = new RequestLog(new Set(['RegisterApplication', 'CommitFiles']));
  /** The operator command each master is stepping (its answer comes in the same step). */
  const commands = new Map<NodeId, AdminCommand>();
  /** Acknowledgements decided and not yet departed, by their effect (the held effect is the same object). */
  const pending = new Map<Effect, Fact[]>();
  /** Facts acknowledged, by node. */
  const acknowledged = new Map<NodeId, Fact[]>();

  const live = (node: NodeId): Fact[] => [
    ...(acknowledged.get(node) ?? []),
    ...[...pending.values()].flat().filter((fact) => fact.node === node),
  ];

  const check = (world: World, node: NodeId, facts: readonly Fact[], when: string) => {
    const store = world.durableStoreOf(node);
    for (const fact of facts) {
      if (fact.superseded || fact.holds(store.get(fact.key))) continue;
      world.fail({
        invariant: 'acknowledged-survives-crash',
        node,
        detail: `${when}, the durable store of ${node} does not hold what it acknowledged at ${(fact.at / 1000).toFixed(3)}s: ${fact.what}`,
      });
      return;
    }
  };

  return {
    inputs: ['admin'],
    onInput(node: NodeId, input: Input) {
      if (input.kind === 'admin' && isMaster(node)) commands.set(node, input.command);
    },
    effects: ['send', 'adminReply', 'persist'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      requests.record(node, effect);
      if (effect.kind === 'persist') {
        // The node's own later decision: what contradicts it is no longer promised.
        for (const fact of live(node)) {
          if (fact.key === effect.key && !fact.holds(effect.value ?? undefined)) fact.superseded = true;
        }
        return;
      }
      const facts = isMaster(node)
        ? masterFacts(node, effect, world.now, requests, commands)
        : isWorker(node)
          ? workerFacts(node, effect, world.now, requests)
          : [];
      if (facts.length > 0) pending.set(effect, facts);
    },
    onDeparture(node: NodeId, effect: Effect, world: World) {
      const facts = pending.get(effect);
      if (facts === undefined) return;
      pending.delete(effect);
      check(world, node, facts, 'when the acknowledgement left');
      const list = acknowledged.get(node) ?? [];
      list.push(...facts.filter((fact) => !fact.superseded));
      acknowledged.set(node, list);
    },
    onCrash(node: NodeId, world: World) {
      // Acknowledgements still held died with the process, unsent: they promised nothing.
      for (const [effect, facts] of pending) if (facts[0]?.node === node) pending.delete(effect);
      const facts = acknowledged.get(node)?.filter((fact) => !fact.superseded) ?? [];
      acknowledged.set(node, facts);
      check(world, node, facts, 'after the crash');
    },
  };
}

/** One thing a node acknowledged: which key of its durable store must say so, and how to tell. */
interface Fact {
  readonly node: NodeId;
  readonly at: number;
  readonly what: string;
  readonly key: string;
  readonly holds: (value: string | undefined) => boolean;
  superseded: boolean;
}

function masterFacts(
  node: NodeId,
  effect: Effect,
  at: number,
  requests: RequestLog,
  commands: ReadonlyMap<NodeId, AdminCommand>,
): Fact[] {
  const fact = (what: string, key: string, holds: (value: string | undefined) => boolean): Fact => ({
    node,
    at,
    what,
    key,
    holds,
    superseded: false,
  });
  const present = (value: string | undefined) => value !== undefined;
  const absent = (value: string | undefined) => value === undefined;
  if (effect.kind === 'send') {
    const message = effect.message;
    if (message.type !== 'StatusResponse' || message.status !== 'SUCCESS') return [];
    const request = requests.find(effect.to, effect.inReplyTo, 'RegisterApplication');
    if (request === undefined) return [];
    const appId = request.appId;
    return [fact(`application ${appId} registered`, appKey(MASTER_STATE_PREFIX, appId), present)];
  }
  if (effect.kind !== 'adminReply' || !effect.success) return [];
  const command = commands.get(node);
  if (command?.type !== 'excludeWorkers') return [];
  const excludedKey = (worker: string) => workerEntryKey(MASTER_STATE_PREFIX, 'manuallyExcluded', worker);
  return [
    ...command.add.map((worker) => fact(`${worker} excluded`, excludedKey(worker), present)),
    ...command.remove.map((worker) => fact(`${worker} no longer excluded`, excludedKey(worker), absent)),
  ];
}

function workerFacts(node: NodeId, effect: Effect, at: number, requests: RequestLog): Fact[] {
  if (effect.kind !== 'send' || effect.message.type !== 'CommitFilesResponse') return [];
  const request = requests.find(effect.to, effect.inReplyTo, 'CommitFiles');
  if (request === undefined) return [];
  const shuffle = shuffleKey(request.appId, request.shuffleId);
  const key = recoveryKey(shuffle);
  const { committedPrimaries, committedReplicas } = effect.message;
  return [...committedPrimaries, ...committedReplicas]
    .filter((file) => file.storage.type !== 'MEMORY')
    .map((file) => {
      const name = fileNameFor(file.uniqueId, file.mode);
      return {
        node,
        at,
        what: `file ${name} of ${shuffle} committed`,
        key,
        holds: (value: string | undefined) => {
          if (value === undefined) return false;
          const decoded = decodeShuffleRecord(key, value);
          return decoded.ok && decoded.shuffle.files.has(name);
        },
        superseded: false,
      };
    });
}
