/** `svc conf check`: every problem of a properties file as of a release, one line each. */
import { CURRENT_RELEASE, type Release } from '../core/release/version.ts';
import { formatNoEffectNotice } from './no-effect.ts';
import { formatProblem, type Location, type Problem } from './problems.ts';
import { DEFAULT_FILE_NAME, resolveConfig, type SettingWithoutEffect } from './resolve.ts';

export interface CheckOptions {
  readonly release?: Release;
  readonly fileName?: string;
  /** For `${env:VAR}` references in values. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface CheckReport {
  readonly problems: readonly Problem[];
  /** The file's settings of keys svc accepts but does not act on: notices, which change no exit status. */
  readonly withoutEffect: readonly SettingWithoutEffect[];
  /** One line per problem and per notice, in line order, then a summary line. */
  readonly lines: readonly string[];
  readonly errorCount: number;
  readonly warningCount: number;
}

function lineOf(where: Location): number {
  return where.kind === 'file' ? where.line : 0;
}

/** File problems in line order (the order a reader fixes them in). */
export function byLine(problems: readonly Problem[]): Problem[] {
  return [...problems].sort((a, b) => lineOf(a.where) - lineOf(b.where));
}

export function checkConfigText(text: string, options: CheckOptions = {}): CheckReport {
  const release = options.release ?? CURRENT_RELEASE;
  const fileName = options.fileName ?? DEFAULT_FILE_NAME;
  const conf = resolveConfig({ release, fileText: text, fileName, env: options.env ?? {} });
  // The environment of whoever runs the check is not part of the file: only the file's own problems count.
  const problems = byLine(conf.problems.filter((problem) => problem.where.kind === 'file'));
  const withoutEffect = conf.settingsWithoutEffect.filter((setting) => setting.where.kind === 'file');
  const errorCount = problems.filter((problem) => problem.severity === 'error').length;
  const warningCount = problems.length - errorCount;
  const notices =
    withoutEffect.length === 0 ? '' : `; ${plural(withoutEffect.length, 'key')} set with no effect in svc`;
  const summary =
    problems.length === 0
      ? `${fileName}: no problems as of release ${release}${notices}`
      : `${fileName}: ${plural(errorCount, 'error')}, ${plural(warningCount, 'warning')} as of release ${release}${notices}`;
  const lines = [
    ...problems.map((problem) => ({ line: lineOf(problem.where), text: formatProblem(problem) })),
    ...withoutEffect.map((setting) => ({ line: lineOf(setting.where), text: formatNoEffectNotice(setting) })),
  ]
    // A stable sort: on one line, the problem comes before the notice.
    .sort((a, b) => a.line - b.line)
    .map((entry) => entry.text);
  return { problems, withoutEffect, lines: [...lines, summary], errorCount, warningCount };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
