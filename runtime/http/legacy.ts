import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  LEGACY_ENDPOINTS,
  legacyEndpointNames,
  legacyEndpointRule,
  legacyEndpointsAt,
  type HttpRole,
  type LegacyEndpointInEffect,
  type LegacyReplacement,
} from '../../core/release/legacy-endpoints.ts';
import { isFeatureAvailable } from '../../core/release/other-changes.ts';
import type { Release } from '../../core/release/version.ts';
import { HttpError, mediaTypeOf } from './errors.ts';
import type { ManagementApi, RouteConfig } from './server.ts';

/**
 * The legacy unversioned endpoints (contract 4.4), served exactly as core/release/legacy-endpoints.ts says they were
 * at the node's release: name, method, where the parameters travel (query string or form body) and the request
 * media type. Answers are plain text; from 0.6.0 each carries `Deprecation` and a `Link` to its /api/v1 successor.
 */

export type LegacyParams = Readonly<Record<string, string>>;
/** A legacy endpoint's text; `setHeader` sets a header of the answer (a follower's X-Svc-Served-By). */
export type LegacyHandler = (
  params: LegacyParams,
  setHeader: (name: string, value: string) => void,
) => string | Promise<string>;
/** Handlers by the endpoint's first name in the history (`/shuffles`, `/blacklistedWorkers`, `/exclude`, ...). */
export type LegacyHandlers = Readonly<Record<string, LegacyHandler>>;

/** The first name of the legacy endpoint served under any of its names, `name`. */
export function legacyIdentity(name: string): string | undefined {
  return LEGACY_ENDPOINTS.find((endpoint) => legacyEndpointNames(endpoint).includes(name))?.initial.name;
}

/** Response headers of a legacy endpoint: deprecation from 0.6.0, and the successor when the node has it. */
export function legacyHeaders(endpoint: LegacyEndpointInEffect): Record<string, string> {
  const headers: Record<string, string> = {};
  if (endpoint.deprecated) headers.deprecation = 'true';
  const successor = successorLink(endpoint.replacement, endpoint.release);
  if (successor !== undefined) headers.link = successor;
  return headers;
}

function successorLink(replacement: LegacyReplacement, release: Release): string | undefined {
  if (replacement.kind !== 'api-v1' || !isFeatureAvailable('api-v1', release)) return undefined;
  const title =
    replacement.field === undefined
      ? `${replacement.method} ${replacement.path}`
      : `${replacement.method} ${replacement.path}, field ${replacement.field}`;
  return `<${replacement.path}>; rel="successor-version"; title="${title}"`;
}

function where(endpoint: LegacyEndpointInEffect): string {
  return `at release ${endpoint.release}, ${endpoint.method} ${endpoint.name}`;
}

/** The parameters of a legacy request, from the query string or the form body as the endpoint's rule says. */
export function legacyParams(
  endpoint: LegacyEndpointInEffect,
  input: {
    readonly contentType?: string;
    readonly body: unknown;
    readonly query: Readonly<Record<string, unknown>>;
  },
): LegacyParams {
  const accepted =
    endpoint.parameters.length === 0 ? 'no parameters' : `parameters ${endpoint.parameters.join(', ')}`;
  let entries: [string, string][];
  if (endpoint.formParameters) {
    const got = mediaTypeOf(input.contentType);
    const empty = input.body === undefined || input.body === null || input.body === '';
    if (!(got === undefined && empty) && got !== endpoint.requestMediaType) {
      throw new HttpError(
        415,
        `${where(endpoint)} takes its form parameters as ${endpoint.requestMediaType}; ` +
          (got === undefined ? 'the request has no Content-Type' : `got ${got}`),
      );
    }
    const inQuery = Object.keys(input.query);
    if (inQuery.length > 0) {
      throw new HttpError(
        400,
        `${inQuery[0]}: ${where(endpoint)} takes ${accepted} as form fields in a ${endpoint.requestMediaType} ` +
          'body, not in the query string',
      );
    }
    entries = empty || typeof input.body !== 'string' ? [] : [...new URLSearchParams(input.body)];
  } else {
    entries = Object.entries(input.query).flatMap(([name, value]): [string, string][] =>
      Array.isArray(value)
        ? value.map((item): [string, string] => [name, String(item)])
        : [[name, String(value)]],
    );
  }
  const params: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!endpoint.parameters.includes(name)) {
      throw new HttpError(400, `${name}: ${where(endpoint)} takes ${accepted}`);
    }
    if (Object.hasOwn(params, name)) {
      throw new HttpError(400, `${name}: given more than once; expected one value (a comma-separated list)`);
    }
    params[name] = value;
  }
  return params;
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request changes the node's state: any method but a read's, and the legacy paths that change state
 * although called with GET (before 0.5.0 and 0.5.1: those whose successor is a POST). The authentication asks an
 * administrator for them; a follower of a master group sends them to the leader.
 */
export function mutatingRequest(
  role: HttpRole,
  release: Release,
): (method: string, route: string | undefined) => boolean {
  const mutatingGets = new Set(
    legacyEndpointsAt(role, release)
      .filter(
        (endpoint) =>
          endpoint.method === 'GET' &&
          endpoint.replacement.kind === 'api-v1' &&
          endpoint.replacement.method === 'POST',
      )
      .map((endpoint) => endpoint.name),
  );
  return (method, route) => !READ_METHODS.has(method) || (route !== undefined && mutatingGets.has(route));
}

/** Registers every legacy endpoint the role serves at its release; throws when the role lacks a handler for one. */
export function registerLegacyRoutes(app: FastifyInstance, api: ManagementApi): void {
  for (const endpoint of legacyEndpointsAt(api.role, api.release)) {
    const identity = legacyIdentity(endpoint.name);
    const handler = identity === undefined ? undefined : api.legacy[identity];
    if (handler === undefined) {
      throw new Error(`the ${api.role} has no handler for legacy endpoint ${endpoint.name} (${api.release})`);
    }
    const takesBody = endpoint.formParameters && endpoint.method === 'POST';
    const config: RouteConfig = takesBody ? { accepts: [endpoint.requestMediaType] } : {};
    app.route({
      method: endpoint.method,
      url: endpoint.name,
      config,
      handler: async (request: FastifyRequest, reply) => {
        const params = legacyParams(endpoint, {
          contentType: request.headers['content-type'],
          body: request.body,
          query: request.query as Readonly<Record<string, unknown>>,
        });
        const text = await handler(params, (name, value) => void reply.header(name, value));
        return reply
          .headers(legacyHeaders(endpoint))
          .type('text/plain; charset=utf-8')
          .send(text.endsWith('\n') ? text : `${text}\n`);
      },
    });
  }
}

/**
 * Why a path that matched no route is not served, when the legacy history knows it: removed (410, with what to use
 * instead), renamed at this release, or served by the other role (404). Undefined for a path it does not know.
 */
export function legacyNotFound(
  path: string,
  api: Pick<ManagementApi, 'role' | 'release'>,
): { readonly statusCode: number; readonly message: string } | undefined {
  const rule = legacyEndpointRule(path, api.role, api.release);
  if (!rule.exists) {
    switch (rule.why) {
      case 'removed':
        return { statusCode: 410, message: rule.message };
      case 'other-role':
        return { statusCode: 404, message: rule.message };
      case 'unknown-path':
        return undefined;
    }
  }
  if (rule.name === path) return undefined;
  const successor =
    rule.replacement.kind === 'api-v1' && isFeatureAvailable('api-v1', api.release)
      ? `, or ${rule.replacement.method} ${rule.replacement.path}` +
        (rule.replacement.field === undefined ? '' : ` (field ${rule.replacement.field})`)
      : '';
  return {
    statusCode: 404,
    message: `${path} is named ${rule.name} at release ${api.release}: use ${rule.method} ${rule.name}${successor}`,
  };
}
