/**
 * What an operator is told about keys svc accepts but does not act on (the registry's `effect` mark): one notice
 * line per setting for `svc conf check`, one warning line for a server's start.
 */
import { formatLocation } from './problems.ts';
import type { ResolvedConfig, SettingWithoutEffect } from './resolve.ts';
import { describeNoEffect } from './registry/spec.ts';

/** `svc-defaults.conf:3: notice: svc.cluster.name is accepted for compatibility, no effect in svc: <reason>`. */
export function formatNoEffectNotice(setting: SettingWithoutEffect): string {
  return `${formatLocation(setting.where)}: notice: ${setting.key} is ${describeNoEffect(setting.effect)}`;
}

/**
 * The one line a server logs at start when its configuration sets keys that change nothing, or undefined when it
 * sets none. Each key is listed once, with its reason.
 */
export function noEffectWarning(conf: ResolvedConfig): string | undefined {
  const byKey = new Map(conf.settingsWithoutEffect.map((setting) => [setting.key, setting.effect]));
  if (byKey.size === 0) return undefined;
  const listed = [...byKey].map(([key, effect]) => `${key} (${describeNoEffect(effect)})`);
  return `configuration sets ${byKey.size === 1 ? 'a key' : `${byKey.size} keys`} svc accepts but does not act on: ${listed.join('; ')}`;
}
