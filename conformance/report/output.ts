// Prints a run's rows (table, summary lines), writes the JSON and JUnit files asked for, and gives the exit status:
// non-zero on any failing row.
import { writeFileSync } from 'node:fs';
import type { RuleRow } from './row.ts';
import { formatFailures, formatJson, formatJunit, formatTable, summarize, summaryLine } from './format.ts';

export interface OutputOptions {
  readonly json?: string;
  readonly junit?: string;
  /** A line saying which matrix ran (npm run conformance). */
  readonly matrix?: string;
  readonly evidenceWidth?: number;
  readonly write?: (text: string) => void;
}

export function report(rows: readonly RuleRow[], options: OutputOptions = {}): number {
  const write = options.write ?? ((text: string) => process.stdout.write(`${text}\n`));
  write(formatTable(rows, { evidenceWidth: options.evidenceWidth ?? 0 }));
  write('');
  if (options.matrix !== undefined) write(options.matrix);
  for (const summary of summarize(rows)) write(summaryLine(summary));
  for (const line of formatFailures(rows)) write(line);
  if (options.json !== undefined) writeFileSync(options.json, formatJson(rows, options.matrix));
  if (options.junit !== undefined) writeFileSync(options.junit, formatJunit(rows));
  return rows.some((row) => row.verdict === 'fail') ? 1 : 0;
}
