import { parseShuffleKey } from '../../core/domain/ids.ts';
import type { Effect, Envelope, Input, NodeId, Principal } from '../../core/machines/effects.ts';
import type { WorkerMachineState } from '../../core/machines/worker/state.ts';
import { encodeBatchFrame } from '../../core/protocol/batch-frame.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { applicationOfNode } from '../../core/protocol/node-ids.ts';
import type { ConnectionIdentity } from '../../core/protocol/speakers.ts';
import type { Release } from '../../core/release/version.ts';
import type { Rng } from '../../core/rng.ts';
import { pick, uniform } from '../world/random.ts';
import type { Observer, World } from '../world/world.ts';

/**
 * isolation, with application authentication on: an intruder (a process that proved only its own application, or
 * nothing) visits workers now and then and asks them to destroy, commit, read or write the shuffles of the
 * applications running there, and answers in the master's name. Every such request must change nothing: the step
 * it causes may only log, count and answer AUTHENTICATION_FAILED. (That honest traffic is never refused shows in
 * the jobs finishing.)
 */
export const INTRUDER: NodeId = 'intruder';

const INTRUDER_PRINCIPALS: readonly (Principal | undefined)[] = [
  undefined,
  { kind: 'application', appId: 'intruder-app' },
];

export function intrudersRefused(): Observer {
  const visited = new Set<NodeId>();
  return {
    inputs: ['receive'],
    onInput(node: NodeId, input: Input) {
      if (input.kind === 'receive' && input.envelope.from === INTRUDER) visited.add(node);
    },
    onStep(node: NodeId, effects: readonly Effect[], world: World) {
      if (!visited.delete(node)) return;
      const harmful = effects.find((effect) => !harmless(effect));
      if (harmful === undefined) return;
      world.fail({
        invariant: 'isolation',
        node,
        detail: `an intruder's request made ${node} do ${describe(harmful)}`,
      });
    },
  };
}

function harmless(effect: Effect): boolean {
  if (effect.kind === 'log' || effect.kind === 'metric') return true;
  return (
    effect.kind === 'send' &&
    effect.to === INTRUDER &&
    effect.message.type === 'StatusResponse' &&
    effect.message.status === 'AUTHENTICATION_FAILED'
  );
}

function describe(effect: Effect): string {
  if (effect.kind !== 'send') return effect.kind;
  const status = 'status' in effect.message ? ` ${String(effect.message.status)}` : '';
  return `send ${effect.message.type}${status} to ${effect.to}`;
}

/**
 * isolation, at the transport: the intruder also connects to a worker and speaks as nodes the worker has routes to
 * (tasks, lifecycle managers, servers), once proving its own application (name theft) and once claiming the
 * victim's application or a server's role and proving nothing (route takeover). The core's speaker rules
 * (core/protocol/speakers.ts) must refuse both: a message meant for another node that goes to the intruder's
 * connection is a violation.
 */
export function routesNotTaken(world: World): void {
  world.onRouteCapture((w, on, via, envelope) => {
    // The answer to a request the intruder sent is its own: it goes back where the request came from.
    if (via !== INTRUDER || (envelope.inReplyTo ?? 0) >= STOLEN_REQUEST_IDS) return;
    w.fail({
      invariant: 'isolation',
      node: on,
      detail:
        `${on} sent ${envelope.message.type} meant for ${envelope.to} to the intruder's connection, which took ` +
        `over ${envelope.to}'s route`,
    });
  });
}

/**
 * Schedules `visits` attempts to steal routes at random times of the first minute, each at a random worker
 * (`stealRoutes`). Drawn from a stream of their own, so that the intruder's other visits keep their draws.
 */
export function scheduleRouteThefts(
  world: World,
  workers: readonly NodeId[],
  rng: Rng,
  visits: number,
): void {
  for (let i = 0; i < visits; i += 1) {
    const at = Math.round(uniform(rng, 1_000, 60_000));
    const worker = pick(rng, workers);
    world.schedule(at, `intruder speaks as ${worker}'s peers`, (w) => {
      if (w.isUp(worker)) stealRoutes(w, worker);
    });
  }
}

/** How many of a worker's routes one visit tries to steal. */
const STOLEN_ROUTES_PER_VISIT = 4;

/** Request ids of the intruder's envelopes in another node's name: above any a node of the run reaches. */
const STOLEN_REQUEST_IDS = 1_000_000_000;

/**
 * Schedules `visits` intruder visits at random times of the first minute, each to a random worker, with every
 * forged request it can build from what that worker holds at the time (read from its state, as a snooping
 * intruder would learn shuffle keys and file ids).
 */
export function scheduleIntruders(world: World, workers: readonly NodeId[], rng: Rng, visits: number): void {
  // Per run, so that a seed replays to the same trace in a process that ran others before.
  const requestIds = { next: 1 };
  for (let i = 0; i < visits; i += 1) {
    const at = Math.round(uniform(rng, 1_000, 60_000));
    const worker = pick(rng, workers);
    const principal = pick(rng, INTRUDER_PRINCIPALS);
    world.schedule(at, `intruder visits ${worker}`, (w) => {
      if (!w.isUp(worker)) return;
      for (const message of forgedRequests(w.stateOf(worker) as WorkerMachineState)) {
        w.inject(worker, {
          kind: 'receive',
          envelope: forged(worker, w.releaseOf(worker), message, principal, requestIds),
        });
      }
    });
  }
}

/**
 * Speaks as up to STOLEN_ROUTES_PER_VISIT of the nodes `worker` has open routes to, each twice: proving the
 * intruder's own application (name theft), then claiming the victim's application (or a worker's role) and proving
 * nothing (route takeover: a stronger intruder than a worker's handshake admits, which demands a proof; only the
 * master admits an unproven client, of an application it does not know yet). Each asks for a chunk of no stream:
 * were the route taken, the worker's later messages to the victim would go to the intruder.
 */
function stealRoutes(world: World, worker: NodeId): void {
  const release = world.releaseOf(worker);
  let requestId = STOLEN_REQUEST_IDS;
  const victims = world.routesOf(worker).filter((node) => node !== INTRUDER);
  for (const victim of victims.slice(0, STOLEN_ROUTES_PER_VISIT)) {
    const owner = applicationOfNode(victim);
    const attempts: readonly {
      readonly identity: ConnectionIdentity;
      readonly principal: Principal | undefined;
    }[] = [
      {
        identity: { role: 'client', application: 'intruder-app' },
        principal: { kind: 'application', appId: 'intruder-app' },
      },
      {
        identity: owner === undefined ? { role: 'worker' } : { role: 'client', application: owner },
        principal: undefined,
      },
    ];
    for (const { identity, principal } of attempts) {
      world.injectVia(
        worker,
        {
          from: victim,
          to: worker,
          fromRelease: release,
          requestId: (requestId += 1),
          message: { type: 'FetchChunk', streamId: -1, chunkIndex: 0 },
          ...(principal === undefined ? {} : { principal }),
        },
        { via: INTRUDER, incarnation: 0, identity, principal },
      );
    }
  }
}

/** A forged envelope, of the worker's own release so that only authentication can stop it. */
function forged(
  to: NodeId,
  release: Release,
  forgery: Forgery,
  principal: Principal | undefined,
  requestIds: { next: number },
): Envelope {
  return {
    from: INTRUDER,
    to,
    fromRelease: release,
    message: forgery.message,
    ...(principal === undefined ? {} : { principal }),
    ...(forgery.inReplyTo === undefined
      ? { requestId: (requestIds.next += 1) }
      : { inReplyTo: forgery.inReplyTo }),
  };
}

interface Forgery {
  readonly message: Message;
  readonly inReplyTo?: number;
}

function forgedRequests(state: WorkerMachineState): Forgery[] {
  const forgeries: Forgery[] = [];
  const keys = [...state.shuffles.keys()];
  for (const [key, shuffle] of state.shuffles) {
    const { appId, shuffleId } = parseShuffleKey(key);
    const files = [...shuffle.files.values()];
    const ids = (mode: 'PRIMARY' | 'REPLICA') =>
      files
        .filter((file) => file.location.mode === mode)
        .map((file) => `${file.location.partitionId}-${file.location.epoch}`);
    const primaryIds = ids('PRIMARY');
    const replicaIds = ids('REPLICA');
    forgeries.push({ message: { type: 'DestroySlots', appId, shuffleId, primaryIds, replicaIds } });
    forgeries.push({
      message: { type: 'CommitFiles', appId, shuffleId, primaryIds, replicaIds, mapAttempts: [0] },
    });
    for (const file of files.slice(0, 2)) {
      const { partitionId, epoch, mode } = file.location;
      forgeries.push({
        message: { type: 'OpenStream', shuffleKey: key, uniqueId: `${partitionId}-${epoch}`, mode },
      });
      const payload = encodeBatchFrame(
        { shuffleId, mapId: 0, attemptId: 0, batchId: 9_999, partitionId, epoch },
        new Uint8Array(8).fill(0x5a),
      );
      const push = { shuffleKey: key, partitionId, epoch, mapId: 0, attemptId: 0, batchId: 9_999, payload };
      forgeries.push({ message: { type: 'PushData', mode: 'PRIMARY', ...push } });
      forgeries.push({ message: { type: 'PushData', mode: 'REPLICA', ...push } });
    }
  }
  for (const [streamId] of state.streams) {
    forgeries.push({ message: { type: 'FetchChunk', streamId, chunkIndex: 0 } });
    forgeries.push({ message: { type: 'CloseStream', streamId } });
  }
  for (const [requestId, request] of state.requests) {
    // Answers in the master's or a replica's name to the worker's pending requests.
    const message: Message =
      request.kind === 'heartbeat'
        ? {
            type: 'WorkerHeartbeatResponse',
            registered: false,
            expiredShuffleKeys: keys,
            workerEvent: 'Immediately',
          }
        : request.kind === 'register'
          ? { type: 'RegisterWorkerResponse', success: false, message: 'forged' }
          : { type: 'StatusResponse', status: 'SUCCESS', message: 'forged' };
    forgeries.push({ message, inReplyTo: requestId });
  }
  return forgeries;
}
