// Sections 2, 4.1, 4.2 and 9.1: every /api/v1 path and method of each role answers in application/json, valid
// against the OpenAPI document the node serves, with section 2's named fields; no /api/v1 before 0.6.0.
import {
  API_MEDIA_TYPE,
  API_V1_SINCE,
  HARMLESS_POST_BODIES,
  MASTER_ENDPOINTS,
  WORKER_ENDPOINTS,
  WORKER_RESOURCE_FIELDS,
  type ApiEndpoint,
  type Role,
} from '../expectations/endpoints.ts';
import { atLeast } from '../expectations/releases.ts';
import { excerpt, request, type Answer } from '../http.ts';
import { servedDocument, type ServedDocument } from '../openapi.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, verdict, type RuleSpec } from '../rows.ts';

function nodesOf(target: Target, role: Role): string[] {
  return role === 'master' ? [target.masterUrl] : [...target.workerUrls];
}

async function documentOf(target: Target, base: string): Promise<{ doc?: ServedDocument; evidence: string }> {
  const answer = await request(target, base, target.openapiPath ?? '/openapi.json');
  const openapi = (answer.json as { openapi?: unknown } | undefined)?.openapi;
  if (answer.status !== 200 || typeof openapi !== 'string')
    return { evidence: `${answer.evidence}: no OpenAPI document (${excerpt(answer.text, 80)})` };
  return { doc: servedDocument(answer.json), evidence: `${answer.evidence}, openapi ${openapi}` };
}

/** Judges one answer of an /api/v1 endpoint; undefined when it conforms. */
function problemOf(
  endpoint: ApiEndpoint,
  answer: Answer,
  doc: ServedDocument | undefined,
): string | undefined {
  if (answer.mediaType !== API_MEDIA_TYPE)
    return `media type ${answer.mediaType || 'none'}, not ${API_MEDIA_TYPE}`;
  if (endpoint.method === 'GET' && answer.status !== 200)
    return `status ${answer.status}: ${excerpt(answer.text)}`;
  if ([404, 405, 415].includes(answer.status) || answer.status >= 500)
    return `status ${answer.status}: the endpoint is not served as ${endpoint.method} with a JSON body (${excerpt(answer.text)})`;
  if (answer.status === 200 && doc !== undefined) {
    const invalid = doc.check(endpoint.method, endpoint.path, 200, answer.json);
    if (invalid !== undefined) return `does not match the served OpenAPI document: ${invalid}`;
  }
  if (doc === undefined) return 'the node serves no OpenAPI document to validate against';
  return undefined;
}

async function endpointRows(
  target: Target,
  role: Role,
  docs: Map<string, ServedDocument | undefined>,
): Promise<RuleRow[]> {
  const endpoints = role === 'master' ? MASTER_ENDPOINTS : WORKER_ENDPOINTS;
  const nodes = nodesOf(target, role);
  const rows: RuleRow[] = [];
  for (const endpoint of endpoints) {
    const spec: RuleSpec = {
      ruleId: `${endpoint.section}/${role}-${endpoint.method}-${endpoint.path}`,
      section: endpoint.section,
      title: `${role} serves ${endpoint.method} ${endpoint.path} (replaces ${endpoint.replaces.join(', ')}) in ${API_MEDIA_TYPE}, as its OpenAPI document says`,
    };
    if (nodes.length === 0) {
      rows.push(notApplicable(target.release, spec, `no ${role} URL was given (--${role})`));
      continue;
    }
    rows.push(
      ...(await guarded(target.release, spec, async () => {
        const evidence: string[] = [];
        const problems: string[] = [];
        const offs: string[] = [];
        for (const base of nodes) {
          const body = HARMLESS_POST_BODIES[`${role} ${endpoint.path}`];
          const answer = await request(target, base, endpoint.path, {
            method: endpoint.method,
            ...(endpoint.method === 'POST'
              ? { body: JSON.stringify(body ?? {}), contentType: API_MEDIA_TYPE }
              : {}),
          });
          if (answer.status === 503 && endpoint.path === '/api/v1/conf/dynamic') {
            offs.push(`${answer.evidence}: ${excerpt(answer.text, 100)}`);
            continue;
          }
          const problem = problemOf(endpoint, answer, docs.get(base));
          evidence.push(answer.evidence);
          if (problem !== undefined) problems.push(`${answer.evidence}: ${problem}`);
        }
        if (problems.length > 0) return fail(target.release, spec, problems.join('; '));
        if (offs.length > 0)
          return notApplicable(
            target.release,
            spec,
            `dynamic configuration is off on this deployment: ${offs.join('; ')}`,
          );
        return pass(target.release, spec, evidence.join('; '));
      })),
    );
  }
  return rows;
}

async function fieldRows(target: Target): Promise<RuleRow[]> {
  const rows: RuleRow[] = [];
  const answers = new Map<string, Answer>();
  for (const field of WORKER_RESOURCE_FIELDS) {
    const spec: RuleSpec = {
      ruleId: `2/${field.role}-workers-field-${field.name}`,
      section: '2',
      title: `GET /api/v1/workers on the ${field.role} carries ${field.name} (${field.type}), replacing ${field.replaces}`,
    };
    const nodes = nodesOf(target, field.role);
    if (nodes.length === 0) {
      rows.push(notApplicable(target.release, spec, `no ${field.role} URL was given`));
      continue;
    }
    rows.push(
      ...(await guarded(target.release, spec, async () => {
        const problems: string[] = [];
        const seen: string[] = [];
        for (const base of nodes) {
          let answer = answers.get(base);
          if (answer === undefined) {
            answer = await request(target, base, '/api/v1/workers');
            answers.set(base, answer);
          }
          const value = (answer.json as Record<string, unknown> | undefined)?.[field.name];
          const type = Array.isArray(value) ? 'array' : typeof value;
          if (value === undefined) problems.push(`${answer.evidence}: no field ${field.name}`);
          else if (type !== field.type)
            problems.push(`${answer.evidence}: ${field.name} is ${type}, not ${field.type}`);
          else
            seen.push(
              `${answer.evidence}: ${field.name} ${Array.isArray(value) ? `[${value.length}]` : JSON.stringify(value)}`,
            );
        }
        return problems.length === 0
          ? pass(target.release, spec, seen.join('; '))
          : fail(target.release, spec, problems.join('; '));
      })),
    );
  }
  return rows;
}

const ABSENT_BEFORE: RuleSpec = {
  ruleId: '9.1/api-v1-not-before-0.6.0',
  section: '9.1',
  title: 'the /api/v1 namespace exists from 0.6.0 on, and not before',
};
const REQUEST_MEDIA: RuleSpec = {
  ruleId: '4/api-v1-request-media-type',
  section: '4',
  title: `/api/v1 takes ${API_MEDIA_TYPE} requests: a POST in another media type is refused (415 or 400)`,
};
const DOCUMENT: RuleSpec = {
  ruleId: '1/openapi-document',
  section: '1',
  title: 'every node serves the OpenAPI document of its /api/v1 interface (for svc-openapi-client, rule 2)',
};

export const endpointsCheck = async (target: Target): Promise<RuleRow[]> => {
  const release = target.release;
  const nodes = [target.masterUrl, ...target.workerUrls];
  if (!atLeast(release, API_V1_SINCE)) {
    const rows = await guarded(release, ABSENT_BEFORE, async () => {
      const answers = await Promise.all(nodes.map((base) => request(target, base, '/api/v1/workers')));
      const served = answers.filter((a) => a.status < 300);
      return served.length === 0
        ? pass(release, ABSENT_BEFORE, answers.map((a) => a.evidence).join('; '))
        : fail(
            release,
            ABSENT_BEFORE,
            `served before ${API_V1_SINCE}: ${served.map((a) => a.evidence).join('; ')}`,
          );
    });
    const why = `/api/v1 arrived in ${API_V1_SINCE}; the legacy endpoints of ${release} are checked under 4.4`;
    for (const endpoint of [...MASTER_ENDPOINTS, ...WORKER_ENDPOINTS])
      rows.push(
        notApplicable(
          release,
          {
            ruleId: `${endpoint.section}/${endpoint.role}-${endpoint.method}-${endpoint.path}`,
            section: endpoint.section,
            title: `${endpoint.role} serves ${endpoint.method} ${endpoint.path}`,
          },
          why,
        ),
      );
    for (const field of WORKER_RESOURCE_FIELDS)
      rows.push(
        notApplicable(
          release,
          {
            ruleId: `2/${field.role}-workers-field-${field.name}`,
            section: '2',
            title: `GET /api/v1/workers on the ${field.role} carries ${field.name}`,
          },
          why,
        ),
      );
    rows.push(
      notApplicable(release, DOCUMENT, `the OpenAPI document arrived with /api/v1 in ${API_V1_SINCE}`),
    );
    return rows;
  }
  const docs = new Map<string, ServedDocument | undefined>();
  const docEvidence: string[] = [];
  for (const base of nodes) {
    try {
      const { doc, evidence } = await documentOf(target, base);
      docs.set(base, doc);
      docEvidence.push(evidence);
    } catch (error) {
      docs.set(base, undefined);
      docEvidence.push(`${base}: ${(error as Error).message}`);
    }
  }
  const rows: RuleRow[] = [
    verdict(
      release,
      DOCUMENT,
      [...docs.values()].every((d) => d !== undefined),
      docEvidence.join('; '),
    ),
    pass(
      release,
      ABSENT_BEFORE,
      `${release} is at least ${API_V1_SINCE}: /api/v1 is checked endpoint by endpoint below`,
    ),
  ];
  rows.push(
    ...(await guarded(release, REQUEST_MEDIA, async () => {
      const answer = await request(target, target.masterUrl, '/api/v1/workers/exclude', {
        method: 'POST',
        body: 'add=127.0.0.1:1:1:1:1',
        contentType: 'text/plain',
      });
      return verdict(
        release,
        REQUEST_MEDIA,
        answer.status === 415 || answer.status === 400,
        `${answer.evidence}: ${excerpt(answer.text, 120)}`,
      );
    })),
  );
  rows.push(...(await endpointRows(target, 'master', docs)));
  rows.push(...(await endpointRows(target, 'worker', docs)));
  rows.push(...(await fieldRows(target)));
  return rows;
};
