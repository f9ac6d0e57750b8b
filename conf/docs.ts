/** docs/configuration.md, generated from the registry and the contract's table by `svc conf docs`. */
import {
  CONFIG_CHANGES,
  defaultHistory,
  fallbackHistory,
  passThroughPrefixes,
  type ConfigChangeRow,
} from '../core/release/config-changes.ts';
import { compareReleases, CURRENT_RELEASE, KNOWN_RELEASES, type Release } from '../core/release/version.ts';
import { describeDefault } from './registry/history.ts';
import { KEY_GROUPS, REGISTRY, type ConfigEntry } from './registry/registry.ts';
import { CONTROL_PLANE_MODULE, MODULES, type KeySpec, type Module, type NoEffect } from './registry/spec.ts';
import { expectedForm } from './values.ts';

/** Text safe inside a table cell: pipes escaped, and `<...>` outside code spans kept from reading as HTML. */
function cell(text: string): string {
  return text
    .split('`')
    .map((part, index) => (index % 2 === 1 ? part : part.replaceAll('<', '&lt;').replaceAll('>', '&gt;')))
    .join('`')
    .replaceAll('|', '\\|');
}

function code(text: string): string {
  return `\`${text.replaceAll('|', '\\|')}\``;
}

/** The registry entry that documents a declaration (the first module's, for `<module>` keys). */
function entryOf(spec: KeySpec): ConfigEntry {
  const entry = REGISTRY.entries.find((candidate) => candidate.template === spec.key);
  if (entry === undefined) throw new Error(`configuration registry: ${spec.key} has no entry`);
  return entry;
}

function typeText(entry: ConfigEntry): string {
  const unlimited = entry.unlimited ? ' or unlimited' : '';
  switch (entry.type) {
    case 'time':
      return 'duration (bare number: ms)';
    case 'bytes':
      return `bytes (bare number: bytes)${unlimited}`;
    case 'enum':
      return `one of ${(entry.values ?? []).join(', ')}`;
    case 'list':
      return entry.values === undefined ? 'list' : `list of ${entry.values.join(', ')}`;
    case 'int':
    case 'double': {
      const range = expectedForm(entry)
        .replace(/^a (whole|decimal) number ?/, '')
        .replace(/, or unlimited$/, '');
      return `${entry.type}${range.length > 0 ? ` ${range}` : ''}${unlimited}`;
    }
    case 'string':
    case 'boolean':
      return entry.type;
  }
}

/** The known release just before `release`. */
function releaseBefore(release: Release): Release {
  const index = (KNOWN_RELEASES as readonly Release[]).indexOf(release);
  const previous = index > 0 ? KNOWN_RELEASES[index - 1] : undefined;
  if (previous === undefined) throw new Error(`configuration history: nothing is known before ${release}`);
  return previous;
}

function defaultText(entry: ConfigEntry): string {
  const now = code(describeDefault(entry, CURRENT_RELEASE));
  const changes = [...defaultHistory(entry.template), ...fallbackHistory(entry.template)];
  const earlier = changes.map(
    (change) => `before ${change.release}: ${code(describeDefault(entry, releaseBefore(change.release)))}`,
  );
  return earlier.length === 0 ? now : `${now} (${[...new Set(earlier)].join('; ')})`;
}

function olderNames(entry: ConfigEntry): string {
  if (entry.deprecation !== undefined) {
    return `deprecated since ${entry.deprecation.release}: use ${code(entry.deprecation.replacement)}`;
  }
  return entry.alternatives
    .map((alternative) => `${code(alternative.key)} (deprecated ${alternative.deprecatedIn})`)
    .join(', ');
}

function sinceText(entry: ConfigEntry): string {
  const removed = entry.removal === undefined ? '' : `; removed in ${entry.removal.release}`;
  const since =
    entry.introducedIn === entry.since
      ? entry.since
      : `${entry.introducedIn} (under an older name from ${entry.since})`;
  return since + removed;
}

/**
 * The mark of a key svc accepts but does not act on, shown at the end of its description; for a `<module>` key that
 * takes effect in some modules, the modules it names.
 */
function effectText(effect: NoEffect | undefined, takesEffectIn?: readonly Module[]): string {
  if (effect === undefined) return '';
  const modules =
    takesEffectIn === undefined
      ? ''
      : ` for ${MODULES.filter((m) => !takesEffectIn.includes(m))
          .map((m) => `\`${m}\``)
          .join(', ')}`;
  return effect.pending === undefined
    ? ` **No effect in svc**${modules} (accepted for compatibility): ${effect.reason}.`
    : ` **Not implemented yet**${modules} (accepted and ignored; ${effect.pending}): ${effect.reason}.`;
}

function keyTable(specs: readonly KeySpec[]): string[] {
  const lines = [
    '| Key | Type | Default | Since | Dynamic | Roles | Older names | Description |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const spec of specs) {
    const entry = entryOf(spec);
    lines.push(
      `| ${code(spec.key)} | ${cell(typeText(entry))} | ${defaultText(entry)} | ${sinceText(entry)} | ` +
        `${entry.dynamic ? 'yes' : 'no'} | ${entry.roles.join(', ')} | ${olderNames(entry)} | ${cell(entry.description + effectText(spec.effect, spec.takesEffectIn))} |`,
    );
  }
  return lines;
}

function historyTable(): string[] {
  const lines = ['| Release | Key | Change (contract wording) |', '| --- | --- | --- |'];
  for (const row of CONFIG_CHANGES)
    lines.push(`| ${row.release} | ${cell(row.subject)} | ${cell(row.contract)} |`);
  return lines;
}

function removedTable(): string[] {
  const removed = REGISTRY.entries
    .filter((entry) => entry.removal !== undefined)
    .sort((a, b) => compareReleases(a.removal?.release ?? '0.0.0', b.removal?.release ?? '0.0.0'));
  const lines = ['| Key | Removed in | Reason |', '| --- | --- | --- |'];
  for (const entry of removed) {
    lines.push(
      `| ${code(entry.key)} | ${entry.removal?.release ?? ''} | ${cell(entry.removal?.reason ?? 'nothing reads it any more')} |`,
    );
  }
  const prefixRows: readonly ConfigChangeRow[] = CONFIG_CHANGES.filter((row) =>
    row.changes.some((change) => change.kind === 'prefix-removed'),
  );
  for (const row of prefixRows)
    lines.push(`| ${cell(row.subject)} | ${row.release} | ${cell(row.contract)} |`);
  return lines;
}

/** How many keys (`<module>` expanded) are accepted with no effect: the documentation's own count. */
function withoutEffectCount(): string {
  const marked = REGISTRY.entries.filter((entry) => entry.effect !== undefined);
  const pending = marked.filter((entry) => entry.effect?.pending !== undefined).length;
  return `${marked.length} of the ${REGISTRY.entries.length} keys (\`<module>\` expanded; ${pending} of them not implemented yet)`;
}

/** The whole of docs/configuration.md. */
export function renderConfigurationDocs(): string {
  const fsconf = passThroughPrefixes()[0];
  const lines: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `npx svc conf docs` from conf/registry and core/release/config-changes.ts. Do not edit. -->',
    '',
    `Every key svc accepts, with its type, default, history and meaning, as of release ${CURRENT_RELEASE}. A`,
    'configuration can be resolved as of any release from 0.2.0: `npx svc conf show --release 0.4.0` prints the',
    'values a node of that release would use, `npx svc conf check FILE` lists every problem of a file and',
    '`npx svc conf migrate FILE --from A --to B` upgrades a file and reports the defaults that change.',
    '',
    `Not every key accepted changes something: ${withoutEffectCount()} are accepted so that a configuration`,
    'written for the reference keeps working, but nothing in svc acts on them; each says so at the end of its',
    'description. **No effect in svc** marks a key that has no meaning in svc’s design (a thread count, where svc',
    'runs one event loop per process), with the reason. **Not implemented yet** marks a key svc means to act on and',
    'does not yet: it is accepted and ignored until the work named is done. `npx svc conf check FILE` prints a',
    '`notice` line for each such key the file sets (its exit status does not change), and a master or worker logs',
    'one `config.noEffect` warning at start listing the ones it was given.',
    '',
    '## Sources and reading order',
    '',
    '- Sources, highest first: command-line overrides, the environment, the properties file `svc-defaults.conf`',
    '  (`key value` or `key=value`, `#` comments), then the key’s fallback key, then its default as of the release.',
    '- For each source, a key is read under its own name first, then under its older names in the order listed;',
    '  an older name is accepted with a warning that names the key to write instead.',
    '- `SVC_LOCAL_HOSTNAME` names the local host of masters and workers and wins over the file (since 0.3.0).',
    '  `SVC_MASTER_HOST` and `SVC_MASTER_PORT` were removed in 0.3.0: setting them is an error; give the master as',
    '  `svc://<host>:<port>` to the worker, or in `svc.master.endpoints`. `rss://` master URLs are refused since 0.3.0.',
    '- A removed key (any `rss.*` key included) is an error; an unknown `svc.*` key is a warning that names the',
    '  nearest known key; a value of the wrong form is an error that names the key, the value and the form expected.',
    `- \`${fsconf?.prefix ?? 'svc.fsconf.'}<key>\` is passed to ${fsconf?.passedTo ?? 'the distributed filesystem client'} as \`<key>\``,
    '  (since 0.3.0). On a batch-engine client, prefix it with the engine’s configuration prefix.',
    '',
    '## Value forms',
    '',
    '| Type | Form |',
    '| --- | --- |',
    ...(['bytes', 'time', 'int', 'double', 'boolean', 'enum', 'list', 'string'] as const).map(
      (type) =>
        `| ${type === 'time' ? 'duration' : type} | ${cell(expectedForm({ type, values: ['A', 'B'] }))} |`,
    ),
    '',
    '- `${env:NAME}` in a value is replaced by environment variable NAME; a variable that is not set is an error.',
    '- `unlimited` (or 9223372036854775807) is accepted where the type says so and means no limit.',
    '- In defaults, `<localhost>` is the local host name and `<tmp>` the temporary directory.',
    '',
  ];
  for (const group of KEY_GROUPS) {
    lines.push(`## ${group.title}`, '');
    if (group.specs.some((spec) => spec.key.includes('<module>'))) {
      lines.push(
        `\`<module>\` is one of ${MODULES.map((module) => `\`${module}\``).join(', ')}: \`rpc\` is the control plane,`,
        '`push`, `fetch` and `replicate` the worker’s data servers, `data` the client’s side of pushing and fetching.',
        `Where the contract names one \`<module>\` key as a fallback, it is the \`${CONTROL_PLANE_MODULE}\` module’s.`,
        '',
      );
    }
    lines.push(...keyTable(group.specs), '');
  }
  lines.push('## Removed keys', '', ...removedTable(), '');
  lines.push(
    '## Configuration changes by release',
    '',
    'Contract section 9.2, as svc applies it (core/release/config-changes.ts).',
    '',
    ...historyTable(),
    '',
  );
  return lines.join('\n');
}
