/**
 * A key as of a release: whether it exists, under which names it is read, its default and its fallback. Every
 * answer that depends on the release comes from the contract's table (core/release/config-changes.ts).
 */
import { defaultAt, fallbackAt, hasDynamicTag, type DefaultRule } from '../../core/release/config-changes.ts';
import { isAtLeast, type Release } from '../../core/release/version.ts';
import type { Alternative, ConfigEntry } from './registry.ts';
import { CONTROL_PLANE_MODULE, type ScaledFallback } from './spec.ts';

/** Whether the setting exists at `release` under any name (removed keys do not). */
export function existsAt(entry: ConfigEntry, release: Release): boolean {
  return isAtLeast(release, entry.since) && !isRemovedAt(entry, release);
}

export function isRemovedAt(entry: ConfigEntry, release: Release): boolean {
  return entry.removal !== undefined && isAtLeast(release, entry.removal.release);
}

/** Whether a node of `release` reads the key under its own name. */
export function ownNameKnownAt(entry: ConfigEntry, release: Release): boolean {
  return existsAt(entry, release) && isAtLeast(release, entry.introducedIn);
}

/**
 * The name a node of `release` reads the setting under: its own name once introduced, before that the older name
 * still in use then; undefined when the setting does not exist at `release`.
 */
export function nameReadAt(entry: ConfigEntry, release: Release): string | undefined {
  if (!existsAt(entry, release)) return undefined;
  if (ownNameKnownAt(entry, release)) return entry.key;
  return entry.alternatives.find((candidate) => !isDeprecatedAt(candidate, release))?.key;
}

/** Whether an older name is already deprecated at `release` (before that, it is the name in use). */
export function isDeprecatedAt(alternative: Alternative, release: Release): boolean {
  return isAtLeast(release, alternative.deprecatedIn);
}

/** The default at `release`: the table's history when it has one, else the declared default. */
export function defaultRuleAt(entry: ConfigEntry, release: Release): DefaultRule | undefined {
  const fromTable = defaultAt(entry.template, release);
  if (fromTable !== undefined) return fromTable;
  return entry.declaredDefault === undefined ? undefined : { kind: 'value', value: entry.declaredDefault };
}

/** The key whose value is used when this one is unset, at `release`. */
export function fallbackRuleAt(entry: ConfigEntry, release: Release): ScaledFallback | undefined {
  const fromTable = fallbackAt(entry.template, release);
  if (fromTable !== undefined) {
    return { key: fromTable.replace('<module>', entry.module ?? CONTROL_PLANE_MODULE), factor: 1 };
  }
  return entry.declaredFallback;
}

/** Whether the key's value can come from dynamic configuration at `release` (the isDynamic tag exists). */
export function isDynamicAt(entry: ConfigEntry, release: Release): boolean {
  return entry.dynamic && hasDynamicTag(release);
}

/** `2`, `EPOLL if epoll is available, else NIO`, `<value of svc.network.timeout>`, `<unset>`. */
export function describeDefault(entry: ConfigEntry, release: Release): string {
  const rule = defaultRuleAt(entry, release);
  if (rule?.kind === 'value') return rule.value === '' ? '(empty)' : rule.value;
  if (rule?.kind === 'platform') {
    return `${rule.rule.preferred} if ${rule.rule.requires} is available, else ${rule.rule.otherwise}`;
  }
  const fallback = fallbackRuleAt(entry, release);
  if (fallback !== undefined) {
    return fallback.factor === 1 ? `<value of ${fallback.key}>` : `<${fallback.factor} × ${fallback.key}>`;
  }
  return '<unset>';
}
