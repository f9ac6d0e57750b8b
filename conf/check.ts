/** `svc conf check`: every problem of a properties file as of a release, one line each. */
import { CURRENT_RELEASE, type Release } from '../core/release/version.ts';
import { formatProblem, type Problem } from './problems.ts';
import { DEFAULT_FILE_NAME, resolveConfig } from './resolve.ts';

export interface CheckOptions {
  readonly release?: Release;
  readonly fileName?: string;
  /** For `${env:VAR}` references in values. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface CheckReport {
  readonly problems: readonly Problem[];
  /** One line per problem, then a summary line. */
  readonly lines: readonly string[];
  readonly errorCount: number;
  readonly warningCount: number;
}

/** File problems in line order (the order a reader fixes them in). */
export function byLine(problems: readonly Problem[]): Problem[] {
  const line = (problem: Problem): number => (problem.where.kind === 'file' ? problem.where.line : 0);
  return [...problems].sort((a, b) => line(a) - line(b));
}

export function checkConfigText(text: string, options: CheckOptions = {}): CheckReport {
  const release = options.release ?? CURRENT_RELEASE;
  const fileName = options.fileName ?? DEFAULT_FILE_NAME;
  const conf = resolveConfig({ release, fileText: text, fileName, env: options.env ?? {} });
  // The environment of whoever runs the check is not part of the file: only the file's own problems count.
  const problems = byLine(conf.problems.filter((problem) => problem.where.kind === 'file'));
  const errorCount = problems.filter((problem) => problem.severity === 'error').length;
  const warningCount = problems.length - errorCount;
  const summary =
    problems.length === 0
      ? `${fileName}: no problems as of release ${release}`
      : `${fileName}: ${plural(errorCount, 'error')}, ${plural(warningCount, 'warning')} as of release ${release}`;
  return { problems, lines: [...problems.map(formatProblem), summary], errorCount, warningCount };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
