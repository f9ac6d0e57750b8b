// Small helpers every check uses to build rows of the shared type (report/row.ts).
import type { RuleRow, Verdict } from './report/row.ts';

export interface RuleSpec {
  readonly ruleId: string;
  readonly section: string;
  readonly title: string;
}

export function row(release: string, spec: RuleSpec, verdict: Verdict, evidence: string): RuleRow {
  return { ...spec, release, verdict, evidence };
}

export const pass = (release: string, spec: RuleSpec, evidence: string): RuleRow =>
  row(release, spec, 'pass', evidence);
export const fail = (release: string, spec: RuleSpec, evidence: string): RuleRow =>
  row(release, spec, 'fail', evidence);
export const notApplicable = (release: string, spec: RuleSpec, why: string): RuleRow =>
  row(release, spec, 'not-applicable', why);

/** pass when `ok`, else fail, with the same evidence. */
export function verdict(release: string, spec: RuleSpec, ok: boolean, evidence: string): RuleRow {
  return row(release, spec, ok ? 'pass' : 'fail', evidence);
}

/**
 * Runs one rule; an exception (a node that does not answer, a refused connection) fails the rule with the error as
 * its evidence instead of ending the suite.
 */
export async function guarded(
  release: string,
  spec: RuleSpec,
  decide: () => Promise<RuleRow | readonly RuleRow[]>,
): Promise<RuleRow[]> {
  try {
    const out = await decide();
    return Array.isArray(out) ? [...(out as RuleRow[])] : [out as RuleRow];
  } catch (error) {
    return [fail(release, spec, `the check could not complete: ${(error as Error).message}`)];
  }
}
