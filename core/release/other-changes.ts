import { assertWithinHistory } from './timeline.ts';
import { compareReleases, isAtLeast, type Release } from './version.ts';

/** What the two copies of a replicated partition are called. */
export interface ReplicationTerms {
  readonly primary: string;
  readonly replica: string;
}

/** Features that arrived in a release and did not exist before it. */
export type Feature = 'api-v1' | 'svc-openapi-client';

/** Contract section 9.3 (and the 0.6.0 arrival of /api/v1, section 9.1 rule 1), one structured row per change. */
export type OtherChange = { readonly release: Release; readonly contract: string } & (
  | { readonly kind: 'environment-variable-removed'; readonly variable: string; readonly instead: string }
  | {
      readonly kind: 'environment-variable-scope';
      readonly variable: string;
      readonly roles: readonly ('master' | 'worker')[];
      readonly overridesPropertiesFile: boolean;
    }
  | { readonly kind: 'master-url-scheme'; readonly before: string; readonly after: string }
  | {
      readonly kind: 'replication-terms';
      readonly before: ReplicationTerms;
      readonly after: ReplicationTerms;
    }
  | { readonly kind: 'shuffle-manager-class-added'; readonly className: string }
  | { readonly kind: 'shuffle-manager-class-removed'; readonly className: string; readonly instead: string }
  | { readonly kind: 'jvm-metric-names-changed' }
  | { readonly kind: 'feature-introduced'; readonly feature: Feature }
);

const MASTER_ADDRESS_INSTEAD =
  'give the master address as svc://<master-host>:<master-port> (worker start script) or in svc.master.endpoints';

/** Contract section 9.3, oldest first. */
export const OTHER_CHANGES: readonly OtherChange[] = [
  {
    release: '0.3.0',
    kind: 'environment-variable-removed',
    variable: 'SVC_MASTER_HOST',
    instead: MASTER_ADDRESS_INSTEAD,
    contract: 'Environment variables SVC_MASTER_HOST and SVC_MASTER_PORT removed.',
  },
  {
    release: '0.3.0',
    kind: 'environment-variable-removed',
    variable: 'SVC_MASTER_PORT',
    instead: MASTER_ADDRESS_INSTEAD,
    contract: 'Environment variables SVC_MASTER_HOST and SVC_MASTER_PORT removed.',
  },
  {
    release: '0.3.0',
    kind: 'environment-variable-scope',
    variable: 'SVC_LOCAL_HOSTNAME',
    roles: ['master', 'worker'],
    overridesPropertiesFile: true,
    contract: 'SVC_LOCAL_HOSTNAME applies to master and worker and takes priority over the properties file.',
  },
  {
    release: '0.3.0',
    kind: 'master-url-scheme',
    before: 'rss',
    after: 'svc',
    contract:
      'Master URL scheme changed from rss:// to svc://. The worker start script sbin/start-worker.sh takes ' +
      'svc://<master-host>:<master-port>.',
  },
  {
    release: '0.3.0',
    kind: 'replication-terms',
    before: { primary: 'master', replica: 'slave' },
    after: { primary: 'primary', replica: 'replica' },
    contract: 'Terminology: master/slave becomes primary/replica.',
  },
  {
    release: '0.3.0',
    kind: 'shuffle-manager-class-added',
    className: 'SparkShuffleManager',
    contract:
      'The SparkShuffleManager-named class, set through the engine’s shuffle-manager property, replaces the ' +
      'RSS-prefixed class. In 0.3.0 both are supported.',
  },
  {
    release: '0.3.1',
    kind: 'jvm-metric-names-changed',
    contract: 'Names of JVM metrics changed.',
  },
  {
    release: '0.4.0',
    kind: 'shuffle-manager-class-removed',
    className: 'RssShuffleManager',
    instead: 'SparkShuffleManager',
    contract: 'The RSS-prefixed shuffle manager class of the batch engine is no longer supported.',
  },
  {
    release: '0.6.0',
    kind: 'feature-introduced',
    feature: 'api-v1',
    contract: 'The management interface is versioned by path namespace /api/v1 (introduced in 0.6.0).',
  },
  {
    release: '0.6.0',
    kind: 'feature-introduced',
    feature: 'svc-openapi-client',
    contract: 'svc-openapi-client is not part of the 0.3.0 changes; it arrives in 0.6.0.',
  },
];

type ChangeOf<Kind extends OtherChange['kind']> = Extract<OtherChange, { kind: Kind }>;

function changesOf<Kind extends OtherChange['kind']>(kind: Kind): readonly ChangeOf<Kind>[] {
  return OTHER_CHANGES.filter((change): change is ChangeOf<Kind> => change.kind === kind);
}

function onlyChangeOf<Kind extends OtherChange['kind']>(kind: Kind): ChangeOf<Kind> {
  const [change, ...more] = changesOf(kind);
  if (change === undefined || more.length > 0) {
    throw new Error(`the release history must hold exactly one '${kind}' change`);
  }
  return change;
}

/** The 9.3 changes an upgrade from `from` to `to` crosses (after `from`, up to and including `to`). */
export function otherChangesBetween(from: Release, to: Release): readonly OtherChange[] {
  return OTHER_CHANGES.filter(
    (change) => compareReleases(change.release, from) > 0 && compareReleases(change.release, to) <= 0,
  );
}

/** What the contract says about an environment variable at `release`. */
export type EnvironmentVariableRule =
  | { readonly status: 'removed'; readonly removedIn: Release; readonly instead: string }
  | {
      readonly status: 'applies';
      readonly since: Release;
      readonly roles: readonly ('master' | 'worker')[];
      readonly overridesPropertiesFile: boolean;
    };

/**
 * The rule for environment variable `variable` at `release`, or undefined when the history states none (a
 * variable it does not name, or one whose rule starts later).
 */
export function environmentVariableRule(
  variable: string,
  release: Release,
): EnvironmentVariableRule | undefined {
  assertWithinHistory(release);
  for (const change of changesOf('environment-variable-removed')) {
    if (change.variable === variable && isAtLeast(release, change.release)) {
      return { status: 'removed', removedIn: change.release, instead: change.instead };
    }
  }
  for (const change of changesOf('environment-variable-scope')) {
    if (change.variable === variable && isAtLeast(release, change.release)) {
      return {
        status: 'applies',
        since: change.release,
        roles: change.roles,
        overridesPropertiesFile: change.overridesPropertiesFile,
      };
    }
  }
  return undefined;
}

/** The scheme of the master URL (`<scheme>://host:port`) at `release`. */
export function masterUrlScheme(release: Release): string {
  assertWithinHistory(release);
  const change = onlyChangeOf('master-url-scheme');
  return isAtLeast(release, change.release) ? change.after : change.before;
}

export interface SchemeChange {
  readonly release: Release;
  readonly before: string;
  readonly after: string;
}

/** The release that changed the master URL scheme, and the schemes before and after it. */
export function masterUrlSchemeChange(): SchemeChange {
  const { release, before, after } = onlyChangeOf('master-url-scheme');
  return { release, before, after };
}

/** What the primary and replica copies are called at `release`. */
export function replicationTerms(release: Release): ReplicationTerms {
  assertWithinHistory(release);
  const change = onlyChangeOf('replication-terms');
  return isAtLeast(release, change.release) ? change.after : change.before;
}

export type ShuffleManagerSupport =
  { readonly supported: true } | { readonly supported: false; readonly message: string };

/**
 * Whether a batch-engine client of `release` accepts `className` as its shuffle manager. The class is matched by
 * its simple name (the part after the last dot), so that the package does not matter.
 */
export function shuffleManagerSupport(className: string, release: Release): ShuffleManagerSupport {
  assertWithinHistory(release);
  const simpleName = className.slice(className.lastIndexOf('.') + 1);
  const added = changesOf('shuffle-manager-class-added').find((change) => change.className === simpleName);
  const removed = changesOf('shuffle-manager-class-removed').find(
    (change) => change.className === simpleName,
  );
  if (added === undefined && removed === undefined) {
    return {
      supported: false,
      message: `'${className}' is not a shuffle manager of svc; set the engine's shuffle-manager property to ${currentShuffleManagers(release)}`,
    };
  }
  if (added !== undefined && !isAtLeast(release, added.release)) {
    return {
      supported: false,
      message: `'${className}' arrived in ${added.release}; a client of ${release} uses ${currentShuffleManagers(release)}`,
    };
  }
  if (removed !== undefined && isAtLeast(release, removed.release)) {
    return {
      supported: false,
      message: `'${className}' is not supported since ${removed.release}; use ${packageOf(className)}${removed.instead}`,
    };
  }
  return { supported: true };
}

/** `a.b.C` → `a.b.`: the replacement class lives in the same package as the class it replaces. */
function packageOf(className: string): string {
  return className.slice(0, className.lastIndexOf('.') + 1);
}

function currentShuffleManagers(release: Release): string {
  const names = [
    ...changesOf('shuffle-manager-class-removed')
      .filter((change) => !isAtLeast(release, change.release))
      .map((change) => change.className),
    ...changesOf('shuffle-manager-class-added')
      .filter((change) => isAtLeast(release, change.release))
      .map((change) => change.className),
  ];
  return names.join(' or ');
}

/** The release that introduced `feature`. */
export function featureSince(feature: Feature): Release {
  const change = changesOf('feature-introduced').find((candidate) => candidate.feature === feature);
  if (change === undefined) throw new Error(`the release history does not say when '${feature}' arrived`);
  return change.release;
}

export function isFeatureAvailable(feature: Feature, release: Release): boolean {
  assertWithinHistory(release);
  return isAtLeast(release, featureSince(feature));
}
