/**
 * Binding: what each written setting means for a node of a given release. A setting either binds to a key (its own
 * name or an older one, possibly with a warning) or is reported and left out (removed, unknown, not yet known to
 * that release). The bound value is parsed here, so that every bad value is reported whether or not it is read.
 */
import { staysCurrent } from './stays-current.ts';
import { removalOf } from '../core/release/config-changes.ts';
import { isAtLeast, type Release } from '../core/release/version.ts';
import type { Location, Problem } from './problems.ts';
import { existsAt, isDeprecatedAt, isRemovedAt, nameReadAt, ownNameKnownAt } from './registry/history.ts';
import type { ConfigEntry, KeyRemoval, NameMatch, Registry } from './registry/registry.ts';
import { substituteEnv } from './substitution.ts';
import { parseValue, type ConfigValue } from './values.ts';

export type SourceKind = 'override' | 'env' | 'file';

/** Higher sources win: a command-line override beats the environment, which beats the properties file. */
export const SOURCE_PRECEDENCE: readonly SourceKind[] = ['override', 'env', 'file'];

export interface Setting {
  /** The name as written. */
  readonly name: string;
  readonly raw: string;
  readonly source: SourceKind;
  readonly where: Location;
}

export type Outcome =
  { readonly ok: true; readonly value: ConfigValue } | { readonly ok: false; readonly message: string };

export interface Binding {
  readonly setting: Setting;
  readonly match: NameMatch;
  readonly outcome: Outcome;
}

export interface BindResult {
  readonly bindings: readonly Binding[];
  readonly problems: readonly Problem[];
}

interface BindContext {
  readonly registry: Registry;
  readonly release: Release;
  readonly env: Readonly<Record<string, string | undefined>>;
}

function problem(
  setting: Setting,
  severity: Problem['severity'],
  code: Problem['code'],
  message: string,
): Problem {
  return { severity, code, where: setting.where, subject: setting.name, message };
}

/** Binds every setting, in order, and reports what is wrong with each. */
export function bindSettings(settings: readonly Setting[], context: BindContext): BindResult {
  const bindings: Binding[] = [];
  const problems: Problem[] = [];
  for (const setting of settings) {
    const classified = classify(setting, context);
    problems.push(...classified.problems);
    if (classified.match === undefined) continue;
    const outcome = parseSetting(setting, classified.match, context.env);
    if (!outcome.ok) problems.push(problem(setting, 'error', 'invalid-value', outcome.message));
    bindings.push({ setting, match: classified.match, outcome });
  }
  problems.push(...duplicates(settings));
  return { bindings, problems };
}

interface Classified {
  readonly match?: NameMatch;
  readonly problems: readonly Problem[];
}

function classify(setting: Setting, context: BindContext): Classified {
  const { registry, release } = context;
  const match = registry.lookup(setting.name);
  if (match === undefined) return classifyUnregistered(setting, context);
  const { entry, alternative } = match;
  const ownName = currentName(match);
  if (isRemovedAt(entry, release)) {
    return {
      problems: [problem(setting, 'error', 'removed-key', removedMessage(setting.name, entry.removal!))],
    };
  }
  if (!existsAt(entry, release)) {
    return {
      problems: [
        problem(
          setting,
          'warning',
          'not-yet-introduced',
          `${setting.name} arrived in ${entry.since}; a ${release} node does not read it (ignored)`,
        ),
      ],
    };
  }
  if (alternative !== undefined) {
    if (!isDeprecatedAt(alternative, release)) return { match, problems: [] };
    const message =
      alternative.how === 'renamed'
        ? `${setting.name} was renamed ${ownName} in ${alternative.deprecatedIn}; write the new name (the value is still used)`
        : `${setting.name} is deprecated since ${alternative.deprecatedIn}; use ${ownName} instead (the value is still used)`;
    return { match, problems: [problem(setting, 'warning', 'deprecated-key', message)] };
  }
  if (!ownNameKnownAt(entry, release)) {
    const olderName = nameReadAt(entry, release);
    const instead =
      olderName === undefined ? '' : `; at ${release} the setting is ${instanceName(olderName, match)}`;
    return {
      problems: [
        problem(
          setting,
          'warning',
          'not-yet-introduced',
          staysCurrent(entry.key)
            ? `${setting.name} arrived in ${entry.introducedIn} (at ${release} the setting is ${olderName === undefined ? 'unnamed' : instanceName(olderName, match)}); svc servers read it whatever release they present (ports, hosts, paths and security stay current)`
            : `${setting.name} arrived in ${entry.introducedIn}; a ${release} node does not read it (ignored)${instead}`,
        ),
      ],
    };
  }
  if (entry.deprecation !== undefined && isAtLeast(release, entry.deprecation.release)) {
    return {
      match,
      problems: [
        problem(
          setting,
          'warning',
          'deprecated-key',
          `${setting.name} is deprecated since ${entry.deprecation.release}; use ${entry.deprecation.replacement} instead (the value is still used)`,
        ),
      ],
    };
  }
  return { match, problems: [] };
}

/** Names outside the registry: removed prefixes (`rss.*`), misspelt `svc.*` keys, and keys of other software. */
function classifyUnregistered(setting: Setting, context: BindContext): Classified {
  const { registry, release } = context;
  const removal = removalOf(setting.name);
  if (removal?.kind === 'prefix') {
    const svcName = `svc.${setting.name.slice(removal.prefix.length)}`;
    const svcMatch = registry.lookup(svcName);
    if (isAtLeast(release, removal.release)) {
      const instead = svcMatch === undefined ? removal.instead : `rename it ${svcName}`;
      return {
        problems: [
          problem(
            setting,
            'error',
            'removed-key',
            `${setting.name}: ${removal.prefix}* keys are not read since ${removal.release}; ${instead}`,
          ),
        ],
      };
    }
    if (svcMatch !== undefined && svcMatch.alternative === undefined) {
      return {
        match: svcMatch,
        problems: [
          problem(
            setting,
            'warning',
            'deprecated-key',
            `${setting.name} is deprecated; use ${svcName} instead (${removal.prefix}* keys are refused from ${removal.release}; the value is still used)`,
          ),
        ],
      };
    }
  }
  const foreign = setting.name.startsWith('svc.') ? '' : ' (svc reads keys starting with svc.)';
  return {
    problems: [
      problem(
        setting,
        'warning',
        'unknown-key',
        `${setting.name} is not a configuration key of svc${foreign} and is ignored${registry.suggestion(setting.name)}`,
      ),
    ],
  };
}

/** `X was removed in 0.6.0 (reason); delete the line`. */
function removedMessage(name: string, removal: KeyRemoval): string {
  const reason = removal.reason === undefined ? '' : ` (${removal.reason})`;
  return `${name} was removed in ${removal.release}${reason}; delete the line, nothing reads it any more`;
}

/** The name a user should write today for a match (with the pattern's variable part filled in). */
export function currentName(match: NameMatch): string {
  return instanceName(match.entry.key, match);
}

function instanceName(template: string, match: NameMatch): string {
  return match.instance === undefined ? template : template.replace(/<(id|key)>/, match.instance);
}

function parseSetting(
  setting: Setting,
  match: NameMatch,
  env: Readonly<Record<string, string | undefined>>,
): Outcome {
  const substituted = substituteEnv(setting.raw, env);
  if (!substituted.ok) return { ok: false, message: `${setting.name}: ${substituted.message}` };
  const translate = match.alternative?.translate;
  let text = substituted.value;
  if (translate !== undefined) {
    const translated = translate[text.trim().toLowerCase()];
    if (translated === undefined) {
      return {
        ok: false,
        message: `${setting.name}: invalid value '${setting.raw}'; expected one of ${Object.keys(translate).join(', ')}`,
      };
    }
    text = translated;
  }
  return parseEntryValue(match.entry, text, setting.name, setting.raw);
}

/** Parses and checks a value of `entry`; the message names the key, the value and the expected form. */
export function parseEntryValue(entry: ConfigEntry, text: string, name: string, raw: string = text): Outcome {
  const parsed = parseValue(text, entry);
  if (!parsed.ok)
    return { ok: false, message: `${name}: invalid value '${raw}'; expected ${parsed.expected}` };
  const expected = entry.check?.(parsed.value);
  if (expected !== undefined)
    return { ok: false, message: `${name}: invalid value '${raw}'; expected ${expected}` };
  return { ok: true, value: parsed.value };
}

/** A name set twice in one source: the later one wins, and the earlier is reported as overridden. */
function duplicates(settings: readonly Setting[]): readonly Problem[] {
  const seen = new Map<string, Setting>();
  const problems: Problem[] = [];
  for (const setting of settings) {
    const id = `${setting.source}\u0000${setting.name}`;
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      problems.push(
        problem(
          earlier,
          'warning',
          'duplicate-key',
          `${setting.name} is set again later${setting.where.kind === 'file' ? ` (line ${setting.where.line})` : ''}; this value is overridden`,
        ),
      );
    }
    seen.set(id, setting);
  }
  return problems;
}
