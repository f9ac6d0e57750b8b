/**
 * `svc conf migrate`: a properties file upgraded from release A to release B (older names renamed, removed keys
 * commented out with the reason, deprecated keys that assemble a newer one replaced by it), and a report of every
 * default that changes between A and B for the keys the file leaves unset, so an operator sees what an upgrade
 * changes before making it.
 */
import { defaultHistory, fallbackHistory, removalOf } from '../core/release/config-changes.ts';
import { compareReleases, isAtLeast, type Release } from '../core/release/version.ts';
import { currentName } from './bind.ts';
import { byLine } from './check.ts';
import { formatProblem, type Problem } from './problems.ts';
import { isCommentOrBlank, splitLines, splitSetting } from './properties.ts';
import { describeDefault, existsAt, isDeprecatedAt, isRemovedAt } from './registry/history.ts';
import { REGISTRY, type ConfigEntry, type NameMatch } from './registry/registry.ts';
import { DEFAULT_FILE_NAME, resolveConfig, type Platform, type ResolvedConfig } from './resolve.ts';
import { formatValue } from './values.ts';

export interface MigrateOptions {
  readonly from: Release;
  readonly to: Release;
  readonly fileName?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly platform?: Platform;
}

/** One change made to the file, by line of the original. */
export interface Edit {
  readonly line: number;
  readonly description: string;
}

/** A default that differs between the two releases for a key the file leaves unset. */
export interface DefaultChange {
  /** The key, or its `<module>` form when every module changes alike. */
  readonly key: string;
  readonly before: string;
  readonly after: string;
  /** The releases (after A, up to B) whose changes make the difference. */
  readonly releases: readonly Release[];
}

/** A key that does not exist at A and has a default at B. */
export interface NewKey {
  readonly key: string;
  readonly default: string;
  readonly since: Release;
}

export interface Migration {
  readonly text: string;
  readonly edits: readonly Edit[];
  readonly defaultChanges: readonly DefaultChange[];
  readonly newKeys: readonly NewKey[];
  /** What is still wrong with the upgraded file as of B. */
  readonly problems: readonly Problem[];
}

const MARK = '# svc conf migrate:';

interface FileLine {
  readonly number: number;
  readonly text: string;
  readonly key?: string;
  readonly value?: string;
}

export function migrateConfigText(text: string, options: MigrateOptions): Migration {
  const { from, to } = options;
  if (compareReleases(from, to) > 0) {
    throw new RangeError(
      `migrate upgrades: --from ${from} is after --to ${to}; a downgrade is not supported`,
    );
  }
  const fileName = options.fileName ?? DEFAULT_FILE_NAME;
  const env = options.env ?? {};
  const lines: FileLine[] = splitLines(text).map((lineText, index) => {
    const setting = isCommentOrBlank(lineText) ? undefined : splitSetting(lineText);
    return { number: index + 1, text: lineText, ...(setting ?? {}) };
  });
  const before = resolveConfig({ release: from, fileText: text, fileName, env, platform: options.platform });
  const { output, edits } = rewrite(lines, before, to);
  const upgraded = output.join('\n') + (text.endsWith('\n') || text.length === 0 ? '\n' : '');
  const after = resolveConfig({ release: to, fileText: upgraded, fileName, env, platform: options.platform });
  const { defaultChanges, newKeys } = compareDefaults(before, after);
  return {
    text: upgraded,
    edits,
    defaultChanges,
    newKeys,
    problems: byLine(after.problems.filter((problem) => problem.where.kind === 'file')),
  };
}

/** The lines that set each current key, by key (a key set under several names has several lines). */
function linesByKey(lines: readonly FileLine[]): Map<string, FileLine[]> {
  const byKey = new Map<string, FileLine[]>();
  for (const line of lines) {
    const match = line.key === undefined ? undefined : REGISTRY.lookup(line.key);
    if (match === undefined) continue;
    const key = currentName(match);
    byKey.set(key, [...(byKey.get(key) ?? []), line]);
  }
  return byKey;
}

function rewrite(
  lines: readonly FileLine[],
  before: ResolvedConfig,
  to: Release,
): { output: string[]; edits: Edit[] } {
  const output: string[] = [];
  const edits: Edit[] = [];
  const byKey = linesByKey(lines);
  const replacedLegacy = new Set<ConfigEntry>();
  const ownLineOf = (key: string): FileLine | undefined => byKey.get(key)?.find((line) => line.key === key);

  for (const line of lines) {
    if (line.key === undefined) {
      output.push(line.text);
      continue;
    }
    const match = REGISTRY.lookup(line.key);
    const commentOut = (reason: string, description: string): void => {
      output.push(`${MARK} ${reason}`, `# ${line.text.trim()}`);
      edits.push({ line: line.number, description });
    };

    if (match === undefined) {
      const svcName = renamedFromRemovedPrefix(line.key, to);
      if (svcName === undefined) output.push(line.text);
      else if (svcName.target === undefined) {
        commentOut(svcName.reason, `commented out ${line.key} (${svcName.reason})`);
      } else if (ownLineOf(svcName.target) !== undefined) {
        commentOut(
          `superseded by ${svcName.target}`,
          `commented out ${line.key} (superseded by ${svcName.target})`,
        );
      } else {
        output.push(renameSetting(line, svcName.target));
        edits.push({
          line: line.number,
          description: `renamed ${line.key} to ${svcName.target} (${svcName.reason})`,
        });
      }
      continue;
    }

    const { entry, alternative } = match;
    const newName = currentName(match);
    if (isRemovedAt(entry, to) && entry.removal !== undefined) {
      const reason = entry.removal.reason === undefined ? '' : ` (${entry.removal.reason})`;
      commentOut(
        `removed in ${entry.removal.release}${reason}`,
        `commented out ${line.key} (removed in ${entry.removal.release})`,
      );
    } else if (alternative !== undefined && isDeprecatedAt(alternative, to)) {
      const own = ownLineOf(newName);
      if (own !== undefined) {
        commentOut(
          `superseded by ${newName} (line ${own.number})`,
          `commented out ${line.key} (superseded by ${newName} on line ${own.number})`,
        );
      } else {
        const value = translated(line, match);
        output.push(renameSetting(line, newName, value));
        const why =
          alternative.how === 'renamed'
            ? `renamed in ${alternative.deprecatedIn}`
            : `deprecated since ${alternative.deprecatedIn}`;
        const valueNote = value === undefined ? '' : `; value ${line.value ?? ''} becomes ${value}`;
        edits.push({
          line: line.number,
          description: `renamed ${line.key} to ${newName} (${why}${valueNote})`,
        });
      }
    } else if (entry.deprecation !== undefined && isAtLeast(to, entry.deprecation.release)) {
      const replacement = REGISTRY.entry(entry.deprecation.replacement).entry;
      const own = ownLineOf(replacement.key);
      if (own !== undefined) {
        commentOut(
          `superseded by ${replacement.key} (line ${own.number})`,
          `commented out ${line.key} (superseded by ${replacement.key})`,
        );
      } else {
        if (!replacedLegacy.has(replacement)) {
          replacedLegacy.add(replacement);
          const value = before.get(replacement.key);
          const valueText = value === undefined ? '' : formatValue(value, replacement.type);
          output.push(`${replacement.key} ${valueText}`);
          edits.push({ line: line.number, description: `added ${replacement.key} ${valueText}` });
        }
        commentOut(
          `replaced by ${replacement.key} (deprecated since ${entry.deprecation.release})`,
          `commented out ${line.key} (replaced by ${replacement.key})`,
        );
      }
    } else {
      output.push(line.text);
    }
  }
  return { output, edits };
}

/** For a name under a prefix that `to` refuses (`rss.*`): the svc key of the same rest, if svc has one. */
function renamedFromRemovedPrefix(
  name: string,
  to: Release,
): { readonly target?: string; readonly reason: string } | undefined {
  const removal = removalOf(name);
  if (removal?.kind !== 'prefix' || !isAtLeast(to, removal.release)) return undefined;
  const svcName = `svc.${name.slice(removal.prefix.length)}`;
  const match = REGISTRY.lookup(svcName);
  const reason = `${removal.prefix}* keys are not read since ${removal.release}`;
  if (match === undefined) return { reason: `${reason} and svc has no key ${svcName}` };
  return { target: currentName(match), reason };
}

/** The new-form value of an older name whose values had another form, or undefined when it is unchanged. */
function translated(line: FileLine, match: NameMatch): string | undefined {
  const translate = match.alternative?.translate;
  if (translate === undefined || line.value === undefined) return undefined;
  return translate[line.value.trim().toLowerCase()];
}

/** The line with its key replaced (and its value, if given), keeping indentation and separator. */
function renameSetting(line: FileLine, newKey: string, newValue?: string): string {
  const start = line.text.indexOf(line.key ?? '');
  const head = line.text.slice(0, start) + newKey;
  const rest = line.text.slice(start + (line.key ?? '').length);
  if (newValue === undefined) return head + rest;
  const separator = /^(\s*[=:]\s*|\s+)/.exec(rest)?.[1] ?? ' ';
  return head + separator + newValue;
}

function compareDefaults(
  before: ResolvedConfig,
  after: ResolvedConfig,
): { defaultChanges: DefaultChange[]; newKeys: NewKey[] } {
  const changes: (DefaultChange & { readonly entry: ConfigEntry })[] = [];
  const newKeys: NewKey[] = [];
  for (const entry of REGISTRY.entries) {
    if (entry.pattern !== undefined || !existsAt(entry, after.release) || after.isSet(entry.key)) continue;
    if (!existsAt(entry, before.release)) {
      const described = describeDefault(entry, after.release);
      if (described !== '<unset>') newKeys.push({ key: entry.key, default: described, since: entry.since });
      continue;
    }
    const was = effectiveDefault(entry, before);
    const becomes = effectiveDefault(entry, after);
    if (was === becomes) continue;
    changes.push({
      entry,
      key: entry.key,
      before: was,
      after: becomes,
      releases: changeReleases(entry, before, after),
    });
  }
  const byRelease = (a: { releases: readonly Release[]; key: string }, b: typeof a): number =>
    compareReleases(a.releases[0] ?? '0.0.0', b.releases[0] ?? '0.0.0') || a.key.localeCompare(b.key);
  return {
    defaultChanges: groupModules(changes).sort(byRelease),
    newKeys: newKeys.sort((a, b) => compareReleases(a.since, b.since) || a.key.localeCompare(b.key)),
  };
}

/** The default as described, with the value a fallback gives in this configuration. */
function effectiveDefault(entry: ConfigEntry, conf: ResolvedConfig): string {
  const described = describeDefault(entry, conf.release);
  if (!described.startsWith('<value of') && !described.includes('×')) return described;
  const value = conf.get(entry.key);
  return value === undefined ? described : `${described} = ${formatValue(value, entry.type)}`;
}

function changeReleases(entry: ConfigEntry, before: ResolvedConfig, after: ResolvedConfig): Release[] {
  const steps = [...defaultHistory(entry.template), ...fallbackHistory(entry.template)].map(
    (step) => step.release,
  );
  const within = steps.filter(
    (release) => compareReleases(release, before.release) > 0 && compareReleases(release, after.release) <= 0,
  );
  return [...new Set(within)].sort(compareReleases);
}

/** Collapses the per-module keys of one `<module>` key into one line when every module changes alike. */
function groupModules(
  changes: readonly (DefaultChange & { readonly entry: ConfigEntry })[],
): DefaultChange[] {
  const grouped: DefaultChange[] = [];
  const done = new Set<string>();
  for (const change of changes) {
    const { entry } = change;
    if (entry.module === undefined) {
      grouped.push({
        key: change.key,
        before: change.before,
        after: change.after,
        releases: change.releases,
      });
      continue;
    }
    if (done.has(entry.template)) continue;
    const siblings = changes.filter((other) => other.entry.template === entry.template);
    const alike = siblings.every((other) => other.before === change.before && other.after === change.after);
    const allModules =
      siblings.length === REGISTRY.entries.filter((other) => other.template === entry.template).length;
    if (alike && allModules) {
      done.add(entry.template);
      grouped.push({
        key: `${entry.template} (every module)`,
        before: change.before,
        after: change.after,
        releases: change.releases,
      });
    } else {
      grouped.push({
        key: change.key,
        before: change.before,
        after: change.after,
        releases: change.releases,
      });
    }
  }
  return grouped;
}

/** The human report printed by `svc conf migrate`. */
export function formatMigrationReport(migration: Migration, options: MigrateOptions): string[] {
  const { from, to } = options;
  const fileName = options.fileName ?? DEFAULT_FILE_NAME;
  const lines = [`svc conf migrate: ${fileName} from ${from} to ${to}`, '', 'Changes made to the file:'];
  lines.push(...listOrNone(migration.edits.map((edit) => `line ${edit.line}: ${edit.description}`)));
  lines.push('', `Defaults that change between ${from} and ${to} for keys this file does not set:`);
  lines.push(
    ...listOrNone(
      migration.defaultChanges.map(
        (change) =>
          `${change.releases.join(', ').padEnd(6)} ${change.key}: ${change.before} → ${change.after}`,
      ),
    ),
  );
  lines.push('', `Keys that do not exist at ${from} (their defaults apply at ${to} unless set):`);
  lines.push(
    ...listOrNone(migration.newKeys.map((key) => `${key.since.padEnd(6)} ${key.key} = ${key.default}`)),
  );
  lines.push('', `Problems left in the upgraded file as of ${to}:`);
  lines.push(...listOrNone(migration.problems.map(formatProblem)));
  return lines;
}

function listOrNone(items: readonly string[]): string[] {
  return items.length === 0 ? ['  (none)'] : items.map((item) => `  ${item}`);
}
