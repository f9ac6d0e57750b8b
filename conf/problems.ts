/**
 * Problems found in a configuration: one per bad line, variable or value, each with where it is and a message that
 * says what is wrong and what to do. Errors stop a node from starting; warnings are logged.
 */

export type Severity = 'error' | 'warning';

export type ProblemCode =
  | 'syntax'
  | 'unknown-key'
  | 'deprecated-key'
  | 'removed-key'
  | 'not-yet-introduced'
  | 'invalid-value'
  | 'duplicate-key'
  | 'shadowed-key'
  | 'removed-environment-variable'
  | 'environment-variable-ignored'
  | 'substitution'
  | 'not-dynamic'
  | 'dynamic-config-unavailable';

/** Where a setting came from. */
export type Location =
  | { readonly kind: 'file'; readonly file: string; readonly line: number }
  | { readonly kind: 'env'; readonly variable: string }
  | { readonly kind: 'override' }
  | { readonly kind: 'dynamic'; readonly file: string; readonly line?: number; readonly scope: string };

export interface Problem {
  readonly severity: Severity;
  readonly code: ProblemCode;
  readonly where: Location;
  /** The key (or variable) the problem is about, as written. */
  readonly subject: string;
  readonly message: string;
}

/** `file:line`, `environment SVC_X`, `command line` or `file:line (TENANT t)`. */
export function formatLocation(where: Location): string {
  switch (where.kind) {
    case 'file':
      return `${where.file}:${where.line}`;
    case 'env':
      return `environment ${where.variable}`;
    case 'override':
      return 'command line';
    case 'dynamic':
      return `${where.file}${where.line === undefined ? '' : `:${where.line}`} (${where.scope})`;
  }
}

/** One line: `svc-defaults.conf:3: error: <message>`. */
export function formatProblem(problem: Problem): string {
  return `${formatLocation(problem.where)}: ${problem.severity}: ${problem.message}`;
}

export function hasErrors(problems: readonly Problem[]): boolean {
  return problems.some((problem) => problem.severity === 'error');
}

/** Thrown when a value is read that the configuration cannot provide; the message says what to change. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}
