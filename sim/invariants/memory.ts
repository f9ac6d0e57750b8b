import { parseShuffleKey, type AppId } from '../../core/domain/index.ts';
import type { Effect, FileRef, NodeId } from '../../core/machines/effects.ts';
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
}

/**
 * memory-without-enabling. Contract rule 4 lets a client before 0.6.0 land revived data in memory on a worker that
 * has memory enabled, although the application never enabled memory: the simulator reports each such application
 * (the consequence the contract warns about), and fails the run only where the contract or our guard forbid it —
 * a client that honours availableTypes (0.6.0+, rule 3), or a worker whose guard is on.
 */
export function memoryUse(policy: MemoryPolicy): Observer & { findings(): readonly MemoryFinding[] } {
  const findings: MemoryFinding[] = [];
  const reported = new Set<AppId>();
  const check = (node: NodeId, file: FileRef, world: World) => {
    if (file.tier !== 'MEMORY') return;
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
    if (!reported.has(appId)) {
      reported.add(appId);
      findings.push({ appId, release: app.release, worker: node, file: file.id });
    }
  };
  return {
    findings: () => findings,
    effects: ['createFile', 'moveFile'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (effect.kind === 'createFile') check(node, effect.file, world);
      else if (effect.kind === 'moveFile') check(node, effect.to, world);
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
