// The report: a table with one row per rule and release, a summary line per release, JSON and JUnit XML. It only
// formats rows; every verdict was decided by a check.
import type { RuleRow, Verdict } from './row.ts';

export interface Summary {
  readonly release: string;
  readonly pass: number;
  readonly fail: number;
  readonly notApplicable: number;
}

export function summarize(rows: readonly RuleRow[]): Summary[] {
  const byRelease = new Map<string, { pass: number; fail: number; notApplicable: number }>();
  for (const row of rows) {
    const counts = byRelease.get(row.release) ?? { pass: 0, fail: 0, notApplicable: 0 };
    if (row.verdict === 'pass') counts.pass += 1;
    else if (row.verdict === 'fail') counts.fail += 1;
    else counts.notApplicable += 1;
    byRelease.set(row.release, counts);
  }
  return [...byRelease].map(([release, counts]) => ({ release, ...counts }));
}

export function summaryLine(summary: Summary): string {
  const verdict = summary.fail === 0 ? 'CONFORMS' : 'DOES NOT CONFORM';
  return `release ${summary.release}: ${verdict}: ${summary.pass} pass, ${summary.fail} fail, ${summary.notApplicable} not applicable`;
}

/**
 * The failing rows again, after the summaries: a long run's table scrolls past, and a CI log often keeps only its
 * tail, so the rows that decide the exit status are repeated where they are still seen. Empty when none fails.
 */
export function formatFailures(rows: readonly RuleRow[]): string[] {
  const failing = rows.filter((row) => row.verdict === 'fail');
  if (failing.length === 0) return [];
  return [
    `failing rows (${failing.length}):`,
    ...failing.map((row) => `  ${row.release} ${row.ruleId} (${row.title}): ${row.evidence}`),
  ];
}

const MARK: Record<Verdict, string> = { pass: 'pass', fail: 'FAIL', 'not-applicable': 'n/a' };

function clip(text: string, width: number): string {
  return text.length <= width ? text.padEnd(width) : `${text.slice(0, width - 1)}…`;
}

/**
 * The table: release, verdict, section, rule id, then the evidence. `evidenceWidth` 0 prints the whole evidence
 * (for a terminal that wraps, or a log); failing rows always print theirs whole.
 */
export function formatTable(rows: readonly RuleRow[], options: { evidenceWidth?: number } = {}): string {
  const idWidth = Math.min(64, Math.max(4, ...rows.map((r) => r.ruleId.length)));
  const width = options.evidenceWidth ?? 0;
  const lines = [
    `${'release'.padEnd(8)} ${'verdict'.padEnd(7)} ${'section'.padEnd(7)} ${'rule'.padEnd(idWidth)} evidence`,
  ];
  for (const row of rows) {
    const evidence = width > 0 && row.verdict !== 'fail' ? clip(row.evidence, width).trimEnd() : row.evidence;
    lines.push(
      `${row.release.padEnd(8)} ${MARK[row.verdict].padEnd(7)} ${row.section.padEnd(7)} ${clip(row.ruleId, idWidth)} ${evidence}`,
    );
  }
  return lines.join('\n');
}

export interface JsonReport {
  readonly suite: 'svc-conformance';
  readonly matrix?: string;
  readonly summaries: readonly Summary[];
  readonly rows: readonly RuleRow[];
}

export function formatJson(rows: readonly RuleRow[], matrix?: string): string {
  const report: JsonReport = {
    suite: 'svc-conformance',
    ...(matrix === undefined ? {} : { matrix }),
    summaries: summarize(rows),
    rows,
  };
  return `${JSON.stringify(report, null, 2)}\n`;
}

function xml(text: string): string {
  return (
    text
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      // Characters XML 1.0 cannot carry at all (control characters other than tab, line feed, carriage return).
      .replace(/[^\t\n\r\u0020-\uffff]/gu, '?')
  );
}

/** JUnit XML: one test suite per release, one test case per rule; not-applicable rows are skipped with the reason. */
export function formatJunit(rows: readonly RuleRow[]): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const summaries = summarize(rows);
  const failures = summaries.reduce((n, s) => n + s.fail, 0);
  const skipped = summaries.reduce((n, s) => n + s.notApplicable, 0);
  out.push(
    `<testsuites name="svc-conformance" tests="${rows.length}" failures="${failures}" skipped="${skipped}">`,
  );
  for (const summary of summaries) {
    const own = rows.filter((r) => r.release === summary.release);
    out.push(
      `  <testsuite name="release ${xml(summary.release)}" tests="${own.length}" failures="${summary.fail}" skipped="${summary.notApplicable}">`,
    );
    for (const row of own) {
      const name = `${xml(row.ruleId)}`;
      const classname = `conformance.${xml(row.release)}.section-${xml(row.section)}`;
      const open = `    <testcase classname="${classname}" name="${name}">`;
      if (row.verdict === 'pass')
        out.push(`${open}<system-out>${xml(`${row.title}\n${row.evidence}`)}</system-out></testcase>`);
      else if (row.verdict === 'fail')
        out.push(`${open}<failure message="${xml(row.title)}">${xml(row.evidence)}</failure></testcase>`);
      else out.push(`${open}<skipped message="${xml(row.evidence)}"/></testcase>`);
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}
