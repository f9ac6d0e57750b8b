// Section 5 where the deployment has authentication on (--auth given): every call that changes a node, made without
// credentials, is refused (401 or 403) and changes nothing. The probes are harmless even if a node wrongly accepts
// them (an unknown worker, an exit type no implementation has).
import {
  API_V1_SINCE,
  HARMLESS_POST_BODIES,
  MASTER_ENDPOINTS,
  WORKER_ENDPOINTS,
} from '../expectations/endpoints.ts';
import { commandAt, LEGACY_COMMANDS } from '../expectations/legacy.ts';
import { atLeast } from '../expectations/releases.ts';
import { formBody, request } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { guarded, notApplicable, verdict, type RuleSpec } from '../rows.ts';

interface Mutation {
  readonly role: 'master' | 'worker';
  readonly label: string;
  readonly send: (base: string) => ReturnType<typeof request>;
}

function mutations(target: Target): Mutation[] {
  const out: Mutation[] = [];
  if (atLeast(target.release, API_V1_SINCE))
    for (const endpoint of [...MASTER_ENDPOINTS, ...WORKER_ENDPOINTS].filter((e) => e.method === 'POST'))
      out.push({
        role: endpoint.role,
        label: `POST ${endpoint.path}`,
        send: (base) =>
          request(target, base, endpoint.path, {
            method: 'POST',
            body: JSON.stringify(HARMLESS_POST_BODIES[`${endpoint.role} ${endpoint.path}`] ?? {}),
            contentType: 'application/json',
            credentials: false,
          }),
      });
  for (const command of LEGACY_COMMANDS) {
    const how = commandAt(command, target.release);
    out.push({
      role: command.role,
      label: `${how.method} ${command.path}`,
      send: (base) =>
        how.form
          ? request(target, base, command.path, {
              method: 'POST',
              body: formBody(command.probe),
              contentType: how.mediaType,
              credentials: false,
            })
          : request(target, base, `${command.path}?${formBody(command.probe)}`, { credentials: false }),
    });
  }
  return out;
}

export const authCheck = async (target: Target): Promise<RuleRow[]> => {
  const release = target.release;
  const rows: RuleRow[] = [];
  const list = mutations(target);
  const specOf = (m: Mutation): RuleSpec => ({
    ruleId: `5/${m.role}-${m.label.replace(' ', '-')}-needs-credentials`,
    section: '5',
    title: `with authentication on, ${m.label} on the ${m.role} without credentials is refused`,
  });
  if (target.auth === undefined) {
    let why = 'the deployment was checked without --auth: authentication is taken to be off';
    try {
      const probe = await request(
        target,
        target.masterUrl,
        atLeast(release, API_V1_SINCE) ? '/api/v1/workers' : '/workerInfo',
      );
      if (probe.status === 401)
        why = `${probe.evidence}: the deployment asks for credentials; run the suite with --auth user:password`;
      else why = `${why} (${probe.evidence} without credentials)`;
    } catch (error) {
      why = `${why}; the master did not answer: ${(error as Error).message}`;
    }
    return list.map((m) => notApplicable(release, specOf(m), why));
  }
  for (const m of list) {
    const nodes = m.role === 'master' ? [target.masterUrl] : [...target.workerUrls];
    if (nodes.length === 0) {
      rows.push(notApplicable(release, specOf(m), `no ${m.role} URL was given`));
      continue;
    }
    rows.push(
      ...(await guarded(release, specOf(m), async () => {
        const answers = await Promise.all(nodes.map((base) => m.send(base)));
        const ok = answers.every((a) => a.status === 401 || a.status === 403);
        return verdict(release, specOf(m), ok, answers.map((a) => a.evidence).join('; '));
      })),
    );
  }
  const reading: RuleSpec = {
    ruleId: '5/credentials-accepted',
    section: '5',
    title: 'the credentials given are accepted for reading',
  };
  rows.push(
    ...(await guarded(release, reading, async () => {
      const answer = await request(
        target,
        target.masterUrl,
        atLeast(release, API_V1_SINCE) ? '/api/v1/workers' : '/workerInfo',
      );
      return verdict(release, reading, answer.status === 200, answer.evidence);
    })),
  );
  return rows;
};
