// Runs check modules against one deployment and gathers their rows. A module that throws becomes one failing row
// naming it: a broken check never hides the others, and never passes silently.
import type { Check, RuleRow, Target } from './report/row.ts';
import { admission } from './checks/admission.ts';
import { authCheck } from './checks/auth.ts';
import { configCheck } from './checks/config.ts';
import { endpointsCheck } from './checks/endpoints.ts';
import { keyEffectsCheck } from './checks/key-effects.ts';
import { legacyCheck } from './checks/legacy.ts';
import { limitsCheck } from './checks/limits.ts';
import { metricsCheck } from './checks/metrics.ts';
import { otherChangesCheck } from './checks/other.ts';
import { statesCheck } from './checks/states.ts';
import { top50 } from './checks/top50.ts';

export interface NamedCheck {
  readonly name: string;
  readonly check: Check;
}

/** Every check of the suite, in report order. */
export const ALL_CHECKS: readonly NamedCheck[] = [
  { name: 'endpoints', check: endpointsCheck },
  { name: 'legacy', check: legacyCheck },
  { name: 'states', check: statesCheck },
  { name: 'auth', check: authCheck },
  { name: 'config', check: configCheck },
  { name: 'metrics', check: metricsCheck },
  { name: 'limits', check: limitsCheck },
  { name: 'key-effects', check: keyEffectsCheck },
  { name: 'other-changes', check: otherChangesCheck },
  { name: 'admission', check: admission },
  { name: 'top50', check: top50 },
];

export async function runChecks(
  target: Target,
  checks: readonly NamedCheck[] = ALL_CHECKS,
): Promise<RuleRow[]> {
  const rows: RuleRow[] = [];
  for (const { name, check } of checks) {
    try {
      rows.push(...(await check(target)));
    } catch (error) {
      rows.push({
        ruleId: `suite/${name}`,
        section: '-',
        release: target.release,
        title: `the ${name} check runs to completion`,
        verdict: 'fail',
        evidence: `the check threw: ${(error as Error).stack ?? String(error)}`.slice(0, 2000),
      });
    }
  }
  return rows;
}
