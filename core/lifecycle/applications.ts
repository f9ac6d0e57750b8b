import { parseShuffleKey, shuffleKey } from '../domain/index.ts';
import type { AppId, ShuffleId, ShuffleKey } from '../domain/index.ts';
import type { UserIdentifier } from '../quota/consumption.ts';

/**
 * The master's view of applications: when each last sent a heartbeat, which shuffles it has registered, and
 * the bytes and files written since the estimated partition size was last recomputed. One immutable,
 * JSON-ready value (insertion-ordered maps; see snapshotApplications) like the worker registry.
 */
export interface ApplicationRegistry {
  readonly apps: ReadonlyMap<AppId, ApplicationRecord>;
  /** Totals reported by application heartbeats since the last takePartitionSizeSample. */
  readonly writtenSinceSample: PartitionSizeSample;
}

export interface ApplicationRecord {
  readonly lastHeartbeat: number;
  /** Registered shuffles, in registration order. */
  readonly shuffles: readonly ShuffleId[];
  /** The secret the application registered (svc.auth.enabled); its connections prove it. Absent: none. */
  readonly secret?: string;
  /** The host of the application's lifecycle manager, as it registered (absent: not told). */
  readonly hostname?: string;
  /** Who the application runs as, for quotas (core/quota). Absent: an application that never registered. */
  readonly user?: UserIdentifier;
}

/** Observed output: estimated partition size = bytes / files (core/slots owns the estimate and bounds). */
export interface PartitionSizeSample {
  readonly bytes: number;
  readonly files: number;
}

export function emptyApplications(): ApplicationRegistry {
  return { apps: new Map(), writtenSinceSample: { bytes: 0, files: 0 } };
}

export interface ApplicationHeartbeat {
  readonly appId: AppId;
  /** Bytes the application committed since its previous heartbeat. */
  readonly bytesWritten: number;
  /** Partition files the application committed since its previous heartbeat. */
  readonly fileCount: number;
  /**
   * svc addition: the shuffles the application has registered, as its lifecycle manager knows them. A master that
   * lost them (it started without its state) takes them back. Absent or empty from older clients.
   */
  readonly shuffleIds?: readonly ShuffleId[];
}

/**
 * Records an application heartbeat (an unknown application becomes known). Counts that are negative or not
 * finite would corrupt the partition-size estimate: they are left out of the totals and `warning` says so
 * (the heartbeat's time still counts).
 */
export function recordApplicationHeartbeat(
  registry: ApplicationRegistry,
  heartbeat: ApplicationHeartbeat,
  now: number,
): {
  readonly registry: ApplicationRegistry;
  readonly warning: string | null;
  /** Shuffles the heartbeat named that the master did not have: registered again (the reference's revise). */
  readonly revised: readonly ShuffleId[];
} {
  const record = registry.apps.get(heartbeat.appId);
  const known = record?.shuffles ?? [];
  const revised = [...new Set(heartbeat.shuffleIds ?? [])].filter(
    (id) => Number.isInteger(id) && id >= 0 && !known.includes(id),
  );
  const apps = new Map(registry.apps).set(heartbeat.appId, {
    ...record,
    lastHeartbeat: now,
    shuffles: revised.length === 0 ? known : [...known, ...revised],
  });
  const valid = [heartbeat.bytesWritten, heartbeat.fileCount].every((n) => Number.isFinite(n) && n >= 0);
  if (!valid) {
    return {
      registry: { ...registry, apps },
      revised,
      warning:
        `application ${heartbeat.appId} reported ${heartbeat.bytesWritten} bytes in ` +
        `${heartbeat.fileCount} files; counts must be non-negative numbers, so they were left out of the ` +
        'partition-size estimate',
    };
  }
  const totals = registry.writtenSinceSample;
  return {
    registry: {
      apps,
      writtenSinceSample: {
        bytes: totals.bytes + heartbeat.bytesWritten,
        files: totals.files + heartbeat.fileCount,
      },
    },
    warning: null,
    revised,
  };
}

/** Hands the totals to the partition-size estimate and starts counting afresh. */
export function takePartitionSizeSample(registry: ApplicationRegistry): {
  readonly registry: ApplicationRegistry;
  readonly sample: PartitionSizeSample;
} {
  return {
    registry: { ...registry, writtenSinceSample: { bytes: 0, files: 0 } },
    sample: registry.writtenSinceSample,
  };
}

/**
 * What an application registers besides being alive: its secret and host. The first secret stays: a registration
 * must not replace it (it proves the application), which the master checks before calling this. A hostname is
 * replaced by the latest.
 */
export function recordApplicationIdentity(
  registry: ApplicationRegistry,
  appId: AppId,
  identity: { readonly secret?: string; readonly hostname?: string; readonly user?: UserIdentifier },
  now: number,
): ApplicationRegistry {
  const record = registry.apps.get(appId);
  const secret = record?.secret ?? identity.secret;
  const hostname = identity.hostname ?? record?.hostname;
  const user = identity.user ?? record?.user;
  const next: ApplicationRecord = {
    lastHeartbeat: now,
    shuffles: record?.shuffles ?? [],
    ...(secret === undefined ? {} : { secret }),
    ...(hostname === undefined ? {} : { hostname }),
    ...(user === undefined ? {} : { user }),
  };
  return { ...registry, apps: new Map(registry.apps).set(appId, next) };
}

/** The hosts of the running applications' lifecycle managers, each once, sorted (GET /api/v1/applications/hostnames). */
export function applicationHostnames(registry: ApplicationRegistry): string[] {
  const hosts = new Set<string>();
  for (const record of registry.apps.values()) if (record.hostname !== undefined) hosts.add(record.hostname);
  return [...hosts].sort();
}

/**
 * Registers a shuffle of an application. An application registering a shuffle is alive, so an unknown one is
 * recorded with a heartbeat at `now` (otherwise it could expire before its first heartbeat arrives).
 */
export function registerShuffle(
  registry: ApplicationRegistry,
  appId: AppId,
  shuffleId: ShuffleId,
  now: number,
): { readonly registry: ApplicationRegistry; readonly alreadyRegistered: boolean } {
  const record = registry.apps.get(appId);
  if (record?.shuffles.includes(shuffleId) === true) return { registry, alreadyRegistered: true };
  const next: ApplicationRecord = {
    ...record,
    lastHeartbeat: record?.lastHeartbeat ?? now,
    shuffles: [...(record?.shuffles ?? []), shuffleId],
  };
  return {
    registry: { ...registry, apps: new Map(registry.apps).set(appId, next) },
    alreadyRegistered: false,
  };
}

export function unregisterShuffle(
  registry: ApplicationRegistry,
  appId: AppId,
  shuffleId: ShuffleId,
): { readonly registry: ApplicationRegistry; readonly wasRegistered: boolean } {
  const record = registry.apps.get(appId);
  if (record?.shuffles.includes(shuffleId) !== true) return { registry, wasRegistered: false };
  const next = { ...record, shuffles: record.shuffles.filter((id) => id !== shuffleId) };
  return { registry: { ...registry, apps: new Map(registry.apps).set(appId, next) }, wasRegistered: true };
}

/** An application that ended (or was lost): forgets it and returns the shuffles it still had, for cleanup. */
export function unregisterApplication(
  registry: ApplicationRegistry,
  appId: AppId,
): { readonly registry: ApplicationRegistry; readonly shuffles: readonly ShuffleKey[] | null } {
  const record = registry.apps.get(appId);
  if (record === undefined) return { registry, shuffles: null };
  const apps = new Map(registry.apps);
  apps.delete(appId);
  return { registry: { ...registry, apps }, shuffles: record.shuffles.map((id) => shuffleKey(appId, id)) };
}

/**
 * Forgets applications whose last heartbeat is older than `timeoutMs`
 * (`svc.master.heartbeat.application.timeout`): expired when now − lastHeartbeat > timeout. Returns each with
 * the shuffles it still had, in registration order.
 */
export function expireApplications(
  registry: ApplicationRegistry,
  now: number,
  timeoutMs: number,
): {
  readonly registry: ApplicationRegistry;
  readonly expired: readonly { readonly appId: AppId; readonly shuffles: readonly ShuffleKey[] }[];
} {
  const expired = [...registry.apps]
    .filter(([, record]) => now - record.lastHeartbeat > timeoutMs)
    .map(([appId, record]) => ({ appId, shuffles: record.shuffles.map((id) => shuffleKey(appId, id)) }));
  if (expired.length === 0) return { registry, expired };
  const apps = new Map(registry.apps);
  for (const { appId } of expired) apps.delete(appId);
  return { registry: { ...registry, apps }, expired };
}

/** Every registered shuffle key, applications in registration order. */
export function registeredShuffleKeys(registry: ApplicationRegistry): ShuffleKey[] {
  return [...registry.apps].flatMap(([appId, record]) => record.shuffles.map((id) => shuffleKey(appId, id)));
}

/** How many shuffles are registered: `registeredShuffleKeys(registry).length`, without building the keys. */
export function registeredShuffleCount(registry: ApplicationRegistry): number {
  let count = 0;
  for (const record of registry.apps.values()) count += record.shuffles.length;
  return count;
}

/**
 * A membership test over the registered shuffle keys (for a worker heartbeat's expired-keys check, which asks about
 * the few keys the worker holds), answered from the applications rather than from every key built as text, which
 * cost each heartbeat as many strings as the cluster has shuffles. A key `<appId>-<shuffleId>` is split at each of
 * its dashes in turn: an application id may hold dashes, and a negative shuffle id begins with one.
 */
export function shuffleLookup(registry: ApplicationRegistry): (key: ShuffleKey) => boolean {
  return (key) => {
    for (let cut = key.indexOf('-'); cut >= 0; cut = key.indexOf('-', cut + 1)) {
      const shuffles = registry.apps.get(key.slice(0, cut))?.shuffles;
      if (shuffles === undefined) continue;
      const text = key.slice(cut + 1);
      const shuffleId = Number(text);
      if (String(shuffleId) === text && shuffles.includes(shuffleId)) return true;
    }
    return false;
  };
}

/**
 * Whether a shuffle a worker holds has expired, so that the worker must drop its data: its application has
 * unregistered it, or ended (`ended`: those that told this master so). An application the master has not heard
 * from since it began serving (`servingSince`) is not taken for ended until one application timeout has passed: a master that started without its state (a
 * replaced disk, a new coordination store) learns of the running applications and their shuffles from their
 * heartbeats, and must not have the workers delete the data of live jobs first. Built once per worker heartbeat.
 */
export function shuffleExpiry(
  registry: ApplicationRegistry,
  clock: {
    readonly now: number;
    readonly servingSince: number;
    readonly applicationTimeoutMs: number;
    readonly ended: ReadonlySet<AppId>;
  },
): (key: ShuffleKey) => boolean {
  const registered = shuffleLookup(registry);
  const unknownAppsExpire = clock.now - clock.servingSince >= clock.applicationTimeoutMs;
  return (key) => {
    if (registered(key)) return false;
    let appId: AppId;
    try {
      appId = parseShuffleKey(key).appId;
    } catch {
      return true; // not a shuffle key at all: nothing of a live application
    }
    return registry.apps.has(appId) || clock.ended.has(appId) || unknownAppsExpire;
  };
}

/** Running applications with their last heartbeat (GET /api/v1/applications). */
export function runningApplications(
  registry: ApplicationRegistry,
): { readonly appId: AppId; readonly lastHeartbeat: number }[] {
  return [...registry.apps].map(([appId, record]) => ({ appId, lastHeartbeat: record.lastHeartbeat }));
}

/** JSON-ready form for the coordination store; applications keep their order. */
export interface ApplicationRegistrySnapshot {
  readonly version: 1;
  readonly apps: readonly {
    readonly appId: AppId;
    readonly lastHeartbeat: number;
    readonly shuffles: readonly ShuffleId[];
    readonly secret?: string;
    readonly hostname?: string;
    readonly user?: UserIdentifier;
  }[];
  readonly writtenSinceSample: PartitionSizeSample;
}

export function snapshotApplications(registry: ApplicationRegistry): ApplicationRegistrySnapshot {
  return {
    version: 1,
    apps: [...registry.apps].map(([appId, record]) => ({ appId, ...record })),
    writtenSinceSample: registry.writtenSinceSample,
  };
}

/** Rebuilds the registry; throws on another snapshot version or an application listed twice. */
export function restoreApplications(snapshot: ApplicationRegistrySnapshot): ApplicationRegistry {
  if (snapshot.version !== 1) {
    throw new RangeError(
      `application registry snapshot version ${String(snapshot.version)} is not supported (expected 1); ` +
        'restore it with the release that wrote it',
    );
  }
  const apps = new Map<AppId, ApplicationRecord>();
  for (const { appId, lastHeartbeat, shuffles, secret, hostname, user } of snapshot.apps) {
    if (apps.has(appId)) throw new RangeError(`application registry snapshot lists ${appId} twice`);
    apps.set(appId, {
      lastHeartbeat,
      shuffles,
      ...(typeof secret === 'string' ? { secret } : {}),
      ...(typeof hostname === 'string' ? { hostname } : {}),
      ...(typeof user?.tenant === 'string' && typeof user.name === 'string'
        ? { user: { tenant: user.tenant, name: user.name } }
        : {}),
    });
  }
  return { apps, writtenSinceSample: snapshot.writtenSinceSample };
}
