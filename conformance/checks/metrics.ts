// Section 9.4: each renamed metric is exported under the name of the release checked, and not under the other.
import { METRIC_RENAMES, DEFAULT_METRICS_PATH } from '../expectations/metrics.ts';
import { atLeast } from '../expectations/releases.ts';
import { request } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, type RuleSpec } from '../rows.ts';

/** The metric names (the `<Name>` of `metrics_<Name>_<Suffix>`) in a Prometheus text exposition. */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^metrics_([A-Za-z0-9_]+?)_(Value|Count|Max|Mean|Min|\d+thPercentile)[{ ]/.exec(line);
    if (match !== null) names.add(match[1]!);
  }
  return names;
}

export const metricsCheck = async (target: Target): Promise<RuleRow[]> => {
  const path = target.metricsPath ?? DEFAULT_METRICS_PATH;
  const scraped = new Map<string, { names?: Set<string>; evidence: string }>();
  const scrape = async (base: string) => {
    let got = scraped.get(base);
    if (got === undefined) {
      const answer = await request(target, base, path);
      got =
        answer.status === 200
          ? { names: exportedNames(answer.text), evidence: answer.evidence }
          : { evidence: `${answer.evidence}: no metrics` };
      scraped.set(base, got);
    }
    return got;
  };
  const rows: RuleRow[] = [];
  for (const rename of METRIC_RENAMES) {
    const renamed = atLeast(target.release, rename.release);
    const [name, other] = renamed ? [rename.after, rename.before] : [rename.before, rename.after];
    const spec: RuleSpec = {
      ruleId: `9.4/${rename.role}-${rename.after}`,
      section: '9.4',
      title: `${rename.role} metric ${rename.before} is renamed ${rename.after} in ${rename.release}: exported as ${name}, never as ${other}`,
    };
    const nodes = rename.role === 'master' ? [target.masterUrl] : [...target.workerUrls];
    if (nodes.length === 0) {
      rows.push(notApplicable(target.release, spec, `no ${rename.role} URL was given`));
      continue;
    }
    rows.push(
      ...(await guarded(target.release, spec, async () => {
        const seen: string[] = [];
        const wrong: string[] = [];
        const missing: string[] = [];
        for (const base of nodes) {
          const { names, evidence } = await scrape(base);
          if (names === undefined) return fail(target.release, spec, evidence);
          if (names.has(other)) wrong.push(`${evidence}: exports metrics_${other}_*`);
          if (names.has(name)) seen.push(`${evidence}: metrics_${name}_*`);
          else missing.push(evidence);
        }
        if (wrong.length > 0)
          return fail(target.release, spec, `the other release's name: ${wrong.join('; ')}`);
        if (seen.length > 0 && missing.length > 0)
          return fail(
            target.release,
            spec,
            `exported by some nodes only: ${seen.join('; ')}; not by ${missing.join('; ')}`,
          );
        if (seen.length === 0)
          return notApplicable(
            target.release,
            spec,
            `this deployment exports the metric under neither name (${missing.join('; ')}): it has no source for it${rename.measures === undefined ? '' : ` (it measures ${rename.measures})`}, so only the absence of ${other} is checked`,
          );
        return pass(target.release, spec, `${seen.join('; ')}; no metrics_${other}_*`);
      })),
    );
  }
  return rows;
};
