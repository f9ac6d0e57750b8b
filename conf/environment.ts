/**
 * The environment variables that configure svc, applied as the release history says (core/release/other-changes.ts):
 * SVC_LOCAL_HOSTNAME names the local host of masters and workers and wins over the properties file;
 * SVC_MASTER_HOST and SVC_MASTER_PORT were removed in 0.3.0 and are refused with what replaced them.
 */
import { environmentVariableRule } from '../core/release/other-changes.ts';
import { CURRENT_RELEASE, isAtLeast, type Release } from '../core/release/version.ts';
import type { Problem } from './problems.ts';
import type { Role } from './registry/spec.ts';

const LOCAL_HOSTNAME = 'SVC_LOCAL_HOSTNAME';

/** The key that holds the local host name of a role, where the role has one. */
const HOST_KEY: Readonly<Partial<Record<Role, string>>> = {
  master: 'svc.master.host',
  worker: 'svc.worker.host',
};

export interface EnvironmentSetting {
  readonly key: string;
  readonly value: string;
  readonly variable: string;
}

export interface EnvironmentReading {
  readonly settings: readonly EnvironmentSetting[];
  /** The local host name the environment gives this node, if it gives one. */
  readonly localHostname?: string;
  readonly problems: readonly Problem[];
}

/** What the `SVC_*` variables of `env` mean for a node of `role` at `release`. */
export function readEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  role: Role | undefined,
  release: Release,
): EnvironmentReading {
  const settings: EnvironmentSetting[] = [];
  const problems: Problem[] = [];
  let localHostname: string | undefined;
  for (const variable of Object.keys(env).sort()) {
    const value = env[variable];
    if (!variable.startsWith('SVC_') || value === undefined) continue;
    const rule = environmentVariableRule(variable, release);
    if (rule?.status === 'removed') {
      problems.push({
        severity: 'error',
        code: 'removed-environment-variable',
        where: { kind: 'env', variable },
        subject: variable,
        message: `${variable} was removed in ${rule.removedIn}; ${rule.instead}`,
      });
    } else if (rule?.status === 'applies') {
      if (
        variable !== LOCAL_HOSTNAME ||
        role === undefined ||
        !rule.roles.some((applies) => applies === role)
      )
        continue;
      localHostname = value;
      const hostKey = HOST_KEY[role];
      if (hostKey !== undefined) settings.push({ key: hostKey, value, variable });
    } else {
      const later = isAtLeast(release, CURRENT_RELEASE)
        ? undefined
        : environmentVariableRule(variable, CURRENT_RELEASE);
      if (later === undefined) continue;
      const since = later.status === 'removed' ? later.removedIn : later.since;
      problems.push({
        severity: 'warning',
        code: 'environment-variable-ignored',
        where: { kind: 'env', variable },
        subject: variable,
        message:
          later.status === 'removed'
            ? `${variable} is not read by svc at any release (it was removed in ${since}); ${later.instead}`
            : `${variable} is read from ${since} on; a ${release} node ignores it`,
      });
    }
  }
  return { settings, ...(localHostname === undefined ? {} : { localHostname }), problems };
}
