import {
  isTypeAvailable,
  parseShuffleKey,
  partitionFileName,
  shuffleKey,
  type AppId,
} from '../../core/domain/index.ts';
import type { Effect, FileRef, Input, NodeId } from '../../core/machines/effects.ts';
import { workerNodeId } from '../../core/protocol/node-ids.ts';
import { reviveStorageBehaviour } from '../../core/release/revive-storage.ts';
import type { Release } from '../../core/release/version.ts';
import type { Observer, World } from '../world/world.ts';

export interface MemoryPolicy {
  /** The application's release and whether its `svc.storage.availableTypes` lists MEMORY. */
  app(appId: AppId): { readonly release: Release; readonly memoryEnabled: boolean } | undefined;
  /** Whether the worker runs the memory guard (refuse memory to applications that did not enable it). */
  guardOn(worker: NodeId): boolean;
}

/** One application whose data went to memory although it never enabled memory (contract rule 4). */
export interface MemoryFinding {
  readonly appId: AppId;
  readonly release: Release;
  readonly worker: NodeId;
  readonly file: string;
  /**
   * How the location came to allow memory: a revive (epoch above 0), or a copy moved to another worker after a
   * failed reserve (epoch 0), which a client before 0.6.0 places with the same default storage as a revive, as the
   * reference's allocateFromCandidates does.
   */
  readonly how: 'revived' | 're-placed after a failed reserve';
}

/** The storage a lifecycle manager reserved a location with, and the location's epoch. */
interface Reserved {
  readonly type: string;
  readonly mask: number;
  readonly epoch: number;
}

/**
 * memory-without-enabling. Contract rule 4 lets a client before 0.6.0 land revived data in memory on a worker that
 * has memory enabled, although the application never enabled it: its revived locations carry the old default
 * storage (MEMORY, mask 0 = every tier). The simulator reports each such application (the consequence the contract
 * warns about) and fails the run wherever memory was used otherwise:
 * - on a location whose available-types mask does not permit MEMORY (any client: the worker must honour the mask
 *   it was sent in ReserveSlots);
 * - for a client that honours availableTypes (0.6.0+, rule 3) that did not list MEMORY;
 * - on a worker whose guard is on, for an application that did not list MEMORY;
 * - for an older client that did not list MEMORY, on any location but one with the old default (type MEMORY,
 *   mask 0), which only its lifecycle manager gives: a revive, or a copy moved after a failed reserve (the
 *   reference's allocateFromCandidates serves both);
 * - and the master's offers must carry the mask the application asked with (its own list, which for such a client
 *   never permits memory), so that an offer can never be that way in.
 */
export function memoryUse(policy: MemoryPolicy): Observer & { findings(): readonly MemoryFinding[] } {
  const findings: MemoryFinding[] = [];
  const reported = new Set<AppId>();
  /** The mask each RequestSlots the master has not answered yet asked with, by `client|requestId`. */
  const requested = new Map<string, number>();
  /** Every location a lifecycle manager reserved, by `worker|fileId`. */
  const reserved = new Map<string, Reserved>();
  const fail = (node: NodeId, world: World, detail: string) =>
    world.fail({ invariant: 'memory-without-enabling', node, detail });
  const check = (node: NodeId, file: FileRef, world: World) => {
    if (file.tier !== 'MEMORY') return;
    const location = reserved.get(`${node}|${file.id}`);
    if (location !== undefined && !isTypeAvailable(location.mask, 'MEMORY')) {
      fail(
        node,
        world,
        `file ${file.id} was created in memory, but the location it was reserved for has the available-types mask ${location.mask}, which does not permit MEMORY`,
      );
      return;
    }
    const appId = appOfFile(file);
    const app = appId === undefined ? undefined : policy.app(appId);
    if (appId === undefined || !app || app.memoryEnabled) return;
    if (reviveStorageBehaviour(app.release) === 'honour-available-types') {
      world.fail({
        invariant: 'memory-without-enabling',
        node,
        detail: `${appId} (client ${app.release}) never enabled MEMORY, yet its file ${file.id} was created in memory (contract rule 3)`,
      });
      return;
    }
    if (policy.guardOn(node)) {
      world.fail({
        invariant: 'memory-without-enabling',
        node,
        detail: `the memory guard is on, yet ${appId} (client ${app.release}), which never enabled MEMORY, got file ${file.id} in memory`,
      });
      return;
    }
    if (location === undefined || location.type !== 'MEMORY' || location.mask !== 0) {
      const how =
        location === undefined
          ? 'no lifecycle manager reserved that location on this worker'
          : `its location (type ${location.type}, mask ${location.mask}) is not the old default of a revive (MEMORY, mask 0)`;
      fail(
        node,
        world,
        `${appId} (client ${app.release}) never enabled MEMORY, yet its file ${file.id} was created in memory, and ${how} (contract rule 4 allows only revived locations)`,
      );
      return;
    }
    if (!reported.has(appId)) {
      reported.add(appId);
      const how = location.epoch > 0 ? 'revived' : 're-placed after a failed reserve';
      findings.push({ appId, release: app.release, worker: node, file: file.id, how });
    }
  };
  return {
    findings: () => findings,
    inputs: ['RequestSlots'],
    onInput(node: NodeId, input: Input) {
      if (input.kind !== 'receive' || input.envelope.message.type !== 'RequestSlots') return;
      requested.set(
        `${input.envelope.from}|${input.envelope.requestId ?? ''}`,
        input.envelope.message.availableTypes,
      );
    },
    effects: ['RequestSlotsResponse', 'ReserveSlots', 'createFile', 'moveFile'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (effect.kind === 'createFile') check(node, effect.file, world);
      else if (effect.kind === 'moveFile') check(node, effect.to, world);
      else if (effect.kind === 'send' && effect.message.type === 'RequestSlotsResponse') {
        const request = `${effect.to}|${effect.inReplyTo ?? ''}`;
        const mask = requested.get(request);
        requested.delete(request);
        if (mask === undefined) return;
        for (const resource of effect.message.workerResource) {
          for (const location of [...resource.primaries, ...resource.replicas]) {
            if (location.storage.availableTypes === mask) continue;
            fail(
              node,
              world,
              `the master offered partition ${location.partitionId} on ${workerNodeId(location.worker)} to ${effect.to} with the available-types mask ${location.storage.availableTypes}, but the request asked for ${mask}`,
            );
            return;
          }
        }
      } else if (effect.kind === 'send' && effect.message.type === 'ReserveSlots') {
        const { appId, shuffleId, primaries, replicas } = effect.message;
        const prefix = `${effect.to}|${shuffleKey(appId, shuffleId)}/`;
        for (const location of [...primaries, ...replicas]) {
          const { type, availableTypes: mask } = location.storage;
          reserved.set(prefix + partitionFileName(location), { type, mask, epoch: location.epoch });
        }
      }
    },
  };
}

/** The application a partition file belongs to (file ids are `<appId>-<shuffleId>/<fileName>`). */
function appOfFile(file: FileRef): AppId | undefined {
  const slash = file.id.indexOf('/');
  try {
    return parseShuffleKey(slash < 0 ? file.id : file.id.slice(0, slash)).appId;
  } catch {
    return undefined;
  }
}
