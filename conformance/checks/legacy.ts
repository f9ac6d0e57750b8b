// Sections 4.3 and 4.4: every legacy path on its role at the release checked (present, renamed, removed), and the
// three legacy commands with their method, form parameters and request media type of that release.
import type { Role } from '../expectations/endpoints.ts';
import {
  LEGACY_COMMANDS,
  LEGACY_GET_PATHS,
  LEGACY_RENAMES,
  REMOVED_ENDPOINT,
  commandAt,
  renameAt,
} from '../expectations/legacy.ts';
import { atLeast } from '../expectations/releases.ts';
import { excerpt, formBody, request, type Answer } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, type RuleSpec } from '../rows.ts';

function nodesOf(target: Target, role: Role): string[] {
  return role === 'master' ? [target.masterUrl] : [...target.workerUrls];
}

/** Runs `probe` on every node of `role`; the rule passes when no node has a problem. */
async function onEveryNode(
  target: Target,
  spec: RuleSpec,
  role: Role,
  probe: (base: string) => Promise<{ problem?: string; evidence: string; off?: boolean }>,
): Promise<RuleRow[]> {
  const nodes = nodesOf(target, role);
  if (nodes.length === 0) return [notApplicable(target.release, spec, `no ${role} URL was given`)];
  return guarded(target.release, spec, async () => {
    const results = await Promise.all(nodes.map(probe));
    const problems = results.filter((r) => r.problem !== undefined);
    const offs = results.filter((r) => r.off === true);
    if (problems.length === 0 && offs.length > 0)
      return notApplicable(
        target.release,
        spec,
        `the feature is off on this deployment: ${offs.map((r) => r.evidence).join('; ')}`,
      );
    return problems.length === 0
      ? pass(target.release, spec, results.map((r) => r.evidence).join('; '))
      : fail(target.release, spec, problems.map((r) => `${r.evidence}: ${r.problem}`).join('; '));
  });
}

const served = (answer: Answer): boolean => answer.status >= 200 && answer.status < 300;

function getPathRows(target: Target): Promise<RuleRow[]>[] {
  const out: Promise<RuleRow[]>[] = [];
  for (const { path, roles } of LEGACY_GET_PATHS)
    for (const role of roles) {
      const spec: RuleSpec = {
        ruleId: `4.4/${role}-GET-${path}`,
        section: '4.4',
        title: `${role} serves the legacy GET ${path}`,
      };
      out.push(
        onEveryNode(target, spec, role, async (base) => {
          const answer = await request(target, base, path);
          // Dynamic configuration off (or not in the release presented): the path answers that it is off.
          if (path === '/listDynamicConfigs' && answer.status === 503)
            return { evidence: `${answer.evidence}: ${excerpt(answer.text, 100)}`, off: true };
          return served(answer)
            ? { evidence: answer.evidence }
            : { evidence: answer.evidence, problem: `not served: ${excerpt(answer.text)}` };
        }),
      );
    }
  return out;
}

function renameRows(target: Target): Promise<RuleRow[]>[] {
  const out: Promise<RuleRow[]>[] = [];
  for (const rename of LEGACY_RENAMES)
    for (const role of rename.roles) {
      const { served: name, notServed } = renameAt(rename, target.release);
      const spec: RuleSpec = {
        ruleId: `4.4/${role}-rename-${rename.before}-${rename.after}`,
        section: '4.4',
        title: `${rename.before} is renamed ${rename.after} in ${rename.release}: ${role} at this release serves ${name} and not ${notServed}`,
      };
      out.push(
        onEveryNode(target, spec, role, async (base) => {
          const [now, other] = [await request(target, base, name), await request(target, base, notServed)];
          const evidence = `${now.evidence}; ${other.evidence}`;
          if (!served(now)) return { evidence, problem: `${name} not served: ${excerpt(now.text)}` };
          if (served(other))
            return {
              evidence,
              problem: `${notServed} is served although its name at ${target.release} is ${name}`,
            };
          return { evidence };
        }),
      );
    }
  return out;
}

function removedRows(target: Target): Promise<RuleRow[]>[] {
  return REMOVED_ENDPOINT.roles.map((role) => {
    const removed = atLeast(target.release, REMOVED_ENDPOINT.release);
    const spec: RuleSpec = {
      ruleId: `4.3/${role}-${REMOVED_ENDPOINT.path}`,
      section: '4.3',
      title: removed
        ? `${role} no longer serves ${REMOVED_ENDPOINT.path} (removed in ${REMOVED_ENDPOINT.release}; the replacement is the top-50 metrics query)`
        : `${role} serves ${REMOVED_ENDPOINT.path} (removed only in ${REMOVED_ENDPOINT.release})`,
    };
    return onEveryNode(target, spec, role, async (base) => {
      const answer = await request(target, base, REMOVED_ENDPOINT.path);
      if (!removed)
        return served(answer)
          ? { evidence: answer.evidence }
          : { evidence: answer.evidence, problem: 'not served' };
      if (served(answer))
        return {
          evidence: answer.evidence,
          problem: `still served at ${target.release}: ${excerpt(answer.text)}`,
        };
      if (answer.status !== 404 && answer.status !== 410)
        return { evidence: answer.evidence, problem: 'a removed path answers 404 or 410' };
      const names = /diskBytesWritten/.test(answer.text) ? ', and names the metrics query' : '';
      return { evidence: `${answer.evidence}${names}` };
    });
  });
}

function commandRows(target: Target): Promise<RuleRow[]>[] {
  const out: Promise<RuleRow[]>[] = [];
  for (const command of LEGACY_COMMANDS) {
    const how = commandAt(command, target.release);
    const call = (
      base: string,
      method: string,
      mediaType: string,
      params: Record<string, string>,
      inBody: boolean,
    ) =>
      request(target, base, inBody ? command.path : `${command.path}?${formBody(params)}`, {
        method,
        ...(inBody ? { body: formBody(params), contentType: mediaType } : {}),
      });
    const accepted = (a: Answer): boolean => ![404, 405, 415].includes(a.status) && a.status < 500;

    const method: RuleSpec = {
      ruleId: `4.4/${command.role}-${command.path}-method`,
      section: '4.4',
      title: `${command.role} serves ${command.path} as ${how.method} at this release, and not as ${how.method === 'GET' ? 'POST' : 'GET'}`,
    };
    out.push(
      onEveryNode(target, method, command.role, async (base) => {
        const right = await call(base, how.method, how.mediaType, { ...command.probe }, how.form);
        const wrongMethod = how.method === 'GET' ? 'POST' : 'GET';
        const wrong = await call(
          base,
          wrongMethod,
          how.mediaType,
          { ...command.probe },
          wrongMethod === 'POST',
        );
        const evidence = `${right.evidence}; ${wrong.evidence}`;
        if (!accepted(right)) return { evidence, problem: `${how.method} refused: ${excerpt(right.text)}` };
        if (wrong.status !== 404 && wrong.status !== 405)
          return { evidence, problem: `${wrongMethod} is not refused as a method (expected 405 or 404)` };
        return { evidence };
      }),
    );

    const params: RuleSpec = {
      ruleId: `4.4/${command.role}-${command.path}-parameters`,
      section: '4.4',
      title: `${command.path} reads ${command.params.join(', ')} from ${how.form ? 'the form body' : 'the query string'} at this release`,
    };
    out.push(
      onEveryNode(target, params, command.role, async (base) => {
        const answer = await call(base, how.method, how.mediaType, { ...command.probe }, how.form);
        return answer.text.includes(command.echo)
          ? {
              evidence: `${answer.evidence}: the answer names ${command.echo} (${excerpt(answer.text, 100)})`,
            }
          : {
              evidence: answer.evidence,
              problem: `the answer does not name ${command.echo}, so the parameters were not read: ${excerpt(answer.text)}`,
            };
      }),
    );

    const media: RuleSpec = {
      ruleId: `4.4/${command.role}-${command.path}-media-type`,
      section: '4.4',
      title: how.form
        ? `${command.path} takes its form in ${how.mediaType} at this release`
        : `${command.path} takes no body at this release (GET with query parameters)`,
    };
    if (!how.form) {
      out.push(
        Promise.resolve([
          notApplicable(
            target.release,
            media,
            `${command.path} is GET with query parameters before ${command.postSince}: no request media type`,
          ),
        ]),
      );
    } else {
      out.push(
        onEveryNode(target, media, command.role, async (base) => {
          const answer = await call(base, 'POST', how.mediaType, { ...command.probe }, true);
          return answer.status === 415
            ? { evidence: answer.evidence, problem: `${how.mediaType} refused: ${excerpt(answer.text)}` }
            : { evidence: answer.evidence };
        }),
      );
    }
  }
  return out;
}

export const legacyCheck = async (target: Target): Promise<RuleRow[]> => {
  const groups = await Promise.all([
    ...getPathRows(target),
    ...renameRows(target),
    ...removedRows(target),
    ...commandRows(target),
  ]);
  return groups.flat();
};
