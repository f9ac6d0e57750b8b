/**
 * Which hosts may register as workers: `svc.master.allowWorkerHostPattern` (if set, the host must match) and
 * `svc.master.denyWorkerHostPattern` (if set, the host must not match). A pattern must match the WHOLE host
 * name, so that `worker-1` does not also admit `worker-10.other-cluster` (see docs/core/lifecycle.md).
 */
export interface HostPolicy {
  readonly allow: RegExp | null;
  readonly deny: RegExp | null;
}

export const ALLOW_ALL_HOSTS: HostPolicy = { allow: null, deny: null };

const ALLOW_KEY = 'svc.master.allowWorkerHostPattern';
const DENY_KEY = 'svc.master.denyWorkerHostPattern';

/**
 * Compiles the two configured patterns (empty or absent = not set). Throws naming the key and the pattern
 * when one is not a valid regular expression: better the master refuses to start than refuses every worker.
 */
export function compileHostPolicy(patterns: {
  readonly allow?: string | null;
  readonly deny?: string | null;
}): HostPolicy {
  return { allow: compile(ALLOW_KEY, patterns.allow), deny: compile(DENY_KEY, patterns.deny) };
}

function compile(key: string, pattern: string | null | undefined): RegExp | null {
  if (pattern === undefined || pattern === null || pattern === '') return null;
  try {
    return new RegExp(`^(?:${pattern})$`);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new SyntaxError(
      `${key} = '${pattern}' is not a valid regular expression (${detail}); fix or unset it`,
      { cause: error },
    );
  }
}

/** Why `host` may not register, or null when it may. */
export function hostRefusal(policy: HostPolicy, host: string): string | null {
  if (policy.allow !== null && !policy.allow.test(host)) {
    return `host '${host}' does not match ${ALLOW_KEY} ${policy.allow.source}`;
  }
  if (policy.deny !== null && policy.deny.test(host)) {
    return `host '${host}' matches ${DENY_KEY} ${policy.deny.source}`;
  }
  return null;
}
