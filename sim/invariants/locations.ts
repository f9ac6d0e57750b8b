import { workerKey, type PartitionLocation } from '../../core/domain/index.ts';
import type { Effect, Input, NodeId } from '../../core/machines/effects.ts';
import type { Message, MessageType } from '../../core/protocol/messages.ts';
import type { Observer, World } from '../world/world.ts';
import { RequestLog } from './requests.ts';

/** The messages that carry partition locations (see locationsIn). */
export const LOCATION_MESSAGES: readonly MessageType[] = [
  'RequestSlotsResponse',
  'ReserveSlots',
  'RegisterShuffleResponse',
  'ReviveResponse',
];

/** Every partition location a message carries (offers, reserves, registrations, revives). */
export function* locationsIn(message: Message): Generator<PartitionLocation> {
  if (message.type === 'RequestSlotsResponse') {
    for (const resource of message.workerResource) {
      yield* resource.primaries;
      yield* resource.replicas;
    }
  } else if (message.type === 'ReserveSlots') {
    yield* message.primaries;
    yield* message.replicas;
  } else if (message.type === 'RegisterShuffleResponse') {
    yield* message.locations;
  } else if (message.type === 'ReviveResponse') {
    for (const result of message.results) if (result.newLocation) yield result.newLocation;
  }
}

/** replica-placement: no location handed out anywhere has its peer on its own worker. */
export function replicaPlacement(): Observer {
  return {
    effects: LOCATION_MESSAGES,
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (effect.kind !== 'send') return;
      for (const location of locationsIn(effect.message)) {
        if (location.peer && workerKey(location.peer.worker) === workerKey(location.worker)) {
          world.fail({
            invariant: 'replica-placement',
            node,
            detail:
              `${effect.message.type} to ${effect.to} places partition ${location.partitionId} epoch ` +
              `${location.epoch} ${location.mode} and its ${location.peer.mode} both on ${workerKey(location.worker)}`,
          });
          return;
        }
      }
    },
  };
}

/**
 * epoch-increase: the new location a revive answers with has an epoch greater than the epoch of the location the
 * task reported as failed. A revive that hands back the old epoch would make two different files share one name.
 */
export function epochsIncrease(): Observer {
  const requests = new RequestLog(new Set(['Revive']));
  return {
    effects: requests.kept,
    onEffect(node, effect) {
      requests.record(node, effect);
    },
    inputs: ['ReviveResponse'],
    onInput(node: NodeId, input: Input, world: World) {
      if (input.kind !== 'receive' || input.envelope.message.type !== 'ReviveResponse') return;
      const revive = requests.find(node, input.envelope.inReplyTo, 'Revive');
      if (!revive) return;
      for (const result of input.envelope.message.results) {
        const asked = revive.requests.find((r) => r.partitionId === result.partitionId);
        if (!result.newLocation || !asked) continue;
        if (result.newLocation.epoch <= asked.epoch) {
          world.fail({
            invariant: 'epoch-increase',
            node,
            detail:
              `revive of partition ${result.partitionId} of ${revive.appId} shuffle ${revive.shuffleId} after epoch ` +
              `${asked.epoch} (${asked.cause}) answered with epoch ${result.newLocation.epoch}`,
          });
          return;
        }
      }
    },
  };
}
