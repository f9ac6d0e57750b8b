import fastifySwagger, { type StaticDocumentSpec } from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { featureSince, isFeatureAvailable } from '../../core/release/other-changes.ts';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { Release } from '../../core/release/version.ts';
import type { Logger } from '../log.ts';
import type { ServerMetrics } from '../metrics/index.ts';
import type { HttpAuth } from './auth.ts';
import { HttpError, mediaTypeOf, nearestPath, schemaErrorMessage, type SchemaError } from './errors.ts';
import {
  legacyIdentity,
  legacyNotFound,
  mutatingRequest,
  registerLegacyRoutes,
  type LegacyHandlers,
} from './legacy.ts';
import { componentSchemaSet, openApiYaml, routeSchemas, servedOpenApiDocument } from './openapi.ts';

/**
 * The management interface of one node: fastify on `svc.<role>.http.host:port`, serving the /api/v1 routes the
 * role gives (schemas from the role's OpenAPI document), the legacy unversioned paths as of the node's release,
 * /openapi.json, /openapi.yaml and Swagger UI at /swagger. Every error is JSON `{message}` with a precise status.
 */

/** Sets a header of the answer being built. */
export type SetHeader = (name: string, value: string) => void;

export interface ApiInput {
  /** The parsed, validated body (JSON routes), or undefined. */
  readonly body: unknown;
  /** The validated query parameters. */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Sets a header of the answer (a follower's X-Svc-Served-By with the etcd revision it read). */
  readonly setHeader: SetHeader;
}

export interface ApiRoute {
  readonly method: 'GET' | 'POST';
  /** Under /api/v1; must be an operation of the role's OpenAPI document. */
  readonly path: string;
  readonly handle: (input: ApiInput) => unknown;
}

/** What one role serves; built by master-api.ts or worker-api.ts over a running machine. */
export interface ManagementApi {
  readonly role: HttpRole;
  /** The release the node presents: decides which legacy paths exist and whether /api/v1 does. */
  readonly release: Release;
  readonly routes: readonly ApiRoute[];
  readonly legacy: LegacyHandlers;
  /** Releases what the role's handlers hold (called when the server closes). */
  readonly close?: () => void;
  /** The node's metrics, served in Prometheus text and JSON (docs/metrics.md); absent when metrics are off. */
  readonly metrics?: MetricsRoutes;
  /** Served by a master that follows its group's leader (docs/high-availability.md); absent: the node itself. */
  readonly follower?: FollowerServing;
}

/** The header that says a follower answered, and from which etcd revision a state read came. */
export const SERVED_BY_HEADER = 'x-svc-served-by';

/**
 * How a follower of a master group serves the same routes: it says so on every answer, and refuses, before any
 * handler runs, every request that would change state and every path it cannot serve.
 */
export interface FollowerServing {
  /** SERVED_BY_HEADER of every answer whose route set none (`follower m2`). */
  readonly servedBy: string;
  /** Why it refuses, and the leader as the election last named it (`<id>@<host>:<port>`, null when unknown). */
  readonly notLeader: () => { readonly message: string; readonly leader: string | null };
  /** GET paths answered as writes are (the master's metrics, which only the leader has). */
  readonly refusedReads?: readonly string[];
}

export interface MetricsRoutes {
  /** svc.metrics.prometheus.path; `/metrics` serves the same text. */
  readonly prometheusPath: string;
  /** svc.metrics.json.path. */
  readonly jsonPath: string;
  readonly metrics: Pick<ServerMetrics, 'render' | 'json' | 'contentType'>;
}

export interface ManagementServerOptions {
  readonly api: ManagementApi;
  readonly logger?: Logger;
  /** Who may read and who may change (./auth.ts); absent: everyone may do everything. */
  readonly auth?: HttpAuth;
  /** Serve HTTPS with this PEM certificate chain and key; absent: plain HTTP. */
  readonly https?: ManagementTls;
}

export interface ManagementTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly passphrase?: string;
}

export interface ManagementServer {
  readonly address: { readonly host: string; readonly port: number };
  readonly app: FastifyInstance;
  /** Stops listening; requests in flight get a few seconds to finish, then their connections are closed. */
  close(): Promise<void>;
}

/** What a route tells the server's hooks about its body. */
export interface RouteConfig {
  /** Media types the route's body may have; absent: the route takes no body. */
  readonly accepts?: readonly string[];
  readonly bodyRequired?: boolean;
}

declare module 'fastify' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface FastifyContextConfig extends RouteConfig {}
}

const JSON_MEDIA_TYPE = 'application/json';
const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

/** The path of a request URL, without its query; undefined when it is not valid percent-encoding. */
export function requestPath(url: string): string | undefined {
  const raw = url.split('?')[0] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function sendError(reply: FastifyReply, status: number, message: string, headers = {}): FastifyReply {
  return reply.code(status).headers(headers).type(JSON_MEDIA_TYPE).send({ message });
}

/** A follower's refusal: 503 `{error: 'not leader', message, leader}`, to be asked again (of the leader) at once. */
function sendNotLeader(reply: FastifyReply, follower: FollowerServing): FastifyReply {
  const { message, leader } = follower.notLeader();
  return reply
    .code(503)
    .header('retry-after', '1')
    .type(JSON_MEDIA_TYPE)
    .send({ error: 'not leader', message, leader });
}

/**
 * A follower's hooks: every answer says who served it; a request that would change state (as the authentication
 * counts them: ./legacy.ts `mutatingRequest`) or asks a refused path is answered "not leader" before its body is
 * read, so that a client is sent on to the leader whatever it sent. Requests for no route keep their 404 or 405.
 */
function serveAsFollower(app: FastifyInstance, api: ManagementApi, follower: FollowerServing): void {
  const mutates = mutatingRequest(api.role, api.release);
  const refused = new Set(follower.refusedReads ?? []);
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    if (route === undefined || (!mutates(request.method, route) && !refused.has(route))) return undefined;
    return sendNotLeader(reply, follower);
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader(SERVED_BY_HEADER)) void reply.header(SERVED_BY_HEADER, follower.servedBy);
    done(null, payload);
  });
  for (const path of refused) app.get(path, (_request, reply) => sendNotLeader(reply, follower));
}

function acceptsMessage(
  request: FastifyRequest,
  accepts: readonly string[],
  got: string | undefined,
): string {
  return (
    `${request.method} ${requestPath(request.url) ?? request.url} accepts ${accepts.join(' or ')}; ` +
    (got === undefined ? 'the request has no Content-Type' : `got ${got}`)
  );
}

/** What a route's body must look like, for the message of a missing or unreadable body. */
function bodyForm(request: FastifyRequest): string {
  const accepts = request.routeOptions.config?.accepts ?? [];
  return accepts.includes(JSON_MEDIA_TYPE)
    ? 'a JSON object as the OpenAPI document (/openapi.json) describes'
    : `a body of type ${accepts.join(' or ')}`;
}

/** Checks a route's media type before its body is validated, so that a wrong type is a 415, not a 400. */
function checkMediaType(request: FastifyRequest): void {
  const config = request.routeOptions.config;
  const accepts = config?.accepts;
  if (accepts === undefined) return;
  const got = mediaTypeOf(request.headers['content-type']);
  if (got === undefined && (request.body === undefined || request.body === null)) {
    if (config?.bodyRequired === true) {
      throw new HttpError(400, `body is required: ${bodyForm(request)}`);
    }
    // An optional body left out: the schema's defaults apply.
    if (accepts.includes(JSON_MEDIA_TYPE)) request.body = {};
    return;
  }
  if (got === undefined || !accepts.includes(got)) {
    throw new HttpError(415, acceptsMessage(request, accepts, got));
  }
}

/**
 * Answers a request the authentication refuses (401 with the challenges, 403, or 429 with Retry-After when too many
 * password checks wait); logs a refused attempt.
 */
function authHook(auth: HttpAuth, logger: Logger | undefined) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const path = requestPath(request.url) ?? request.url;
    const decision = await auth.decide({
      method: request.method,
      route: request.routeOptions.url,
      path,
      authorization: request.headers.authorization,
    });
    if (decision.allowed) return undefined;
    if (decision.status === 429) {
      // Under a flood of Basic requests: one line per request would be the flood again.
      logger?.debug(
        {
          event: 'http.passwordChecksFull',
          method: request.method,
          path,
          peer: request.ip,
          user: decision.user,
        },
        `management interface: ${decision.message}`,
      );
      void reply.header('retry-after', String(decision.retryAfterSeconds));
      return sendError(reply, 429, decision.message);
    }
    const fields = {
      event: decision.status === 401 ? 'http.unauthorized' : 'http.forbidden',
      method: request.method,
      path,
      peer: request.ip,
      scheme: decision.scheme,
      user: decision.user,
      reason: decision.message,
    };
    // A request without credentials is a client's usual first step: not worth a warning.
    if (decision.presented) logger?.warn(fields, `management interface: ${decision.message}`);
    else logger?.debug(fields, `management interface: ${decision.message}`);
    if (decision.challenges.length > 0) void reply.header('www-authenticate', [...decision.challenges]);
    return sendError(reply, decision.status, decision.message);
  };
}

function onError(logger: Logger | undefined) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (error instanceof HttpError) return sendError(reply, error.statusCode, error.message, error.headers);
    if (error.validation !== undefined && error.validation.length > 0) {
      const context = error.validationContext ?? 'request';
      return sendError(reply, 400, schemaErrorMessage(context, error.validation[0] as SchemaError));
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
        const accepts = request.routeOptions.config?.accepts ?? [];
        const got = mediaTypeOf(request.headers['content-type']);
        return sendError(
          reply,
          415,
          accepts.length > 0
            ? acceptsMessage(request, accepts, got)
            : `${request.method} ${requestPath(request.url) ?? request.url} takes no body; got ${got ?? 'one'}`,
        );
      }
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(reply, 400, `body is not valid JSON: expected ${bodyForm(request)}`);
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(reply, 400, `body is empty: expected ${bodyForm(request)}`);
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(
          reply,
          413,
          `body is larger than the ${request.routeOptions.bodyLimit} bytes accepted`,
        );
      default:
        break;
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return sendError(reply, status, error.message);
    // The cause (a path, a peer, a stack) is for the operator's log, not for whoever called: the answer names the
    // request so that the two can be matched.
    logger?.error(
      {
        event: 'http.error',
        requestId: request.id,
        method: request.method,
        url: request.url,
        error: String(error.stack ?? error),
      },
      `management interface failed on ${request.method} ${request.url}`,
    );
    return sendError(
      reply,
      500,
      `internal error in request ${request.id}; the server's log has its cause (event http.error)`,
    );
  };
}

/** Builds the server (not listening): used by startManagementServer and by tests through inject(). */
export async function buildManagementServer(options: ManagementServerOptions): Promise<FastifyInstance> {
  const { api, logger, auth } = options;
  // With `https`, fastify serves through node:https (HTTP/1.1 over TLS 1.2 or newer).
  const app = Fastify({
    ...(options.https === undefined ? {} : { https: { ...options.https, minVersion: 'TLSv1.2' as const } }),
    logger: false,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, useDefaults: true },
    },
    forceCloseConnections: 'idle',
    // Errors fastify raises before routing (a URL that is not valid percent-encoding): the same JSON shape.
    frameworkErrors: (error, request, reply) => {
      void sendError(reply, 400, `the URL ${request.url} is not valid: ${error.message}`);
    },
    // Requests that are not HTTP at all (an unknown method, a malformed header) never reach fastify: same shape.
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
      const body = JSON.stringify({
        message: tooLarge
          ? 'the request headers are too large'
          : `the request is not valid HTTP/1.1 (${error.code ?? error.message})`,
      });
      socket.end(
        `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\n` +
          `content-type: ${JSON_MEDIA_TYPE}; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
          `connection: close\r\n\r\n${body}`,
      );
    },
  });
  const routes = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = routes.get(route.url) ?? new Set<string>();
    for (const method of methods) known.add(method);
    routes.set(route.url, known);
  });
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'string' }, (_request, body, done) =>
    done(null, body),
  );
  app.setErrorHandler(onError(logger));
  // First of all hooks, before any route or plugin is added, so that it guards every path (404s included).
  if (auth !== undefined) app.addHook('onRequest', authHook(auth, logger));
  if (api.follower !== undefined) serveAsFollower(app, api, api.follower);
  // Once the server is closing, every answer still sent closes its connection, so that close() need not wait for
  // clients' idle keep-alive connections.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onClose', (_instance, done) => {
    api.close?.();
    done();
  });

  const apiV1 = isFeatureAvailable('api-v1', api.release);
  if (apiV1) {
    app.addSchema(componentSchemaSet(api.role));
    for (const route of api.routes) {
      const schemas = routeSchemas(api.role, route.method, route.path);
      const config: RouteConfig =
        schemas.body === undefined ? {} : { accepts: schemas.accepts, bodyRequired: schemas.bodyRequired };
      app.route({
        method: route.method,
        url: route.path,
        config,
        schema: {
          ...(schemas.body === undefined ? {} : { body: schemas.body }),
          querystring: schemas.querystring,
          response: schemas.responses,
        },
        preValidation: (request, _reply, done) => {
          checkMediaType(request);
          done();
        },
        handler: (request, reply) =>
          route.handle({
            body: request.body,
            query: request.query as Readonly<Record<string, string | undefined>>,
            setHeader: (name, value) => void reply.header(name, value),
          }),
      });
    }
    const served = servedOpenApiDocument(api.role, auth?.settings.schemes ?? []);
    app.get('/openapi.json', (_request, reply) => reply.send(served));
    app.get('/openapi.yaml', async (_request, reply) =>
      reply.type('application/yaml').send(openApiYaml(api.role)),
    );
    await app.register(fastifySwagger, {
      mode: 'static',
      specification: { document: served as unknown as StaticDocumentSpec['document'] },
    });
    await app.register(fastifySwaggerUi, { routePrefix: '/swagger' });
  }
  registerLegacyRoutes(app, api);
  if (api.metrics !== undefined) {
    const { prometheusPath, jsonPath, metrics } = api.metrics;
    for (const url of new Set([prometheusPath, '/metrics'])) {
      app.get(url, async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render()));
    }
    app.get(jsonPath, async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send(await metrics.json()),
    );
  }

  app.setNotFoundHandler((request, reply) => {
    const path = requestPath(request.url);
    if (path === undefined) {
      return sendError(reply, 400, `the path of ${request.url} is not valid percent-encoding`);
    }
    const normalized = path.replace(/\/{2,}/g, '/').replace(/(.)\/+$/, '$1');
    const allowed = routes.get(normalized);
    if (allowed !== undefined && allowed.size > 0) {
      const allow = [...allowed].sort().join(', ');
      if (request.method === 'OPTIONS') return reply.code(204).header('allow', allow).send();
      const legacy = legacyIdentity(normalized) === undefined ? '' : ` at release ${api.release}`;
      return sendError(
        reply,
        405,
        `${request.method} is not allowed on ${normalized}${legacy}; allowed: ${allow}`,
        {
          allow,
        },
      );
    }
    const legacy = legacyNotFound(normalized, api);
    if (legacy !== undefined) return sendError(reply, legacy.statusCode, legacy.message);
    if (!apiV1 && /^\/(api|openapi|swagger)(\/|\.|$)/.test(normalized)) {
      return sendError(
        reply,
        404,
        `${normalized}: this ${api.role} presents release ${api.release}, which has no /api/v1 ` +
          `nor its OpenAPI document (they arrived in ${featureSince('api-v1')}); use the unversioned paths of that release`,
      );
    }
    const candidates = [...routes.keys()].filter(
      (candidate) => !candidate.includes('*') && !candidate.includes(':'),
    );
    const nearest = nearestPath(normalized, candidates);
    return sendError(
      reply,
      404,
      `no ${request.method} ${normalized} on this ${api.role}` +
        (nearest === undefined ? '' : `; the nearest valid path is ${nearest}`) +
        (apiV1 ? ' (every /api/v1 path: GET /openapi.json)' : ''),
    );
  });
  await app.ready();
  return app;
}

/** Builds the server and listens on `host:port` (0: a free port, as the returned address says). */
export async function startManagementServer(
  options: ManagementServerOptions & { readonly host: string; readonly port: number },
): Promise<ManagementServer> {
  const app = await buildManagementServer(options);
  if (options.https !== undefined) {
    app.server.on('tlsClientError', (error: NodeJS.ErrnoException, socket: TLSSocket) => {
      const plain = /WRONG_VERSION_NUMBER|HTTP_REQUEST/.test(error.code ?? '');
      options.logger?.warn(
        {
          event: 'http.tlsRefused',
          peer: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`,
          code: error.code,
        },
        plain
          ? 'management interface: refused a request that is not HTTPS (the interface is served on https://)'
          : `management interface: a TLS handshake failed (${error.code ?? error.message})`,
      );
    });
  }
  await app.listen({ host: options.host, port: options.port });
  const bound = app.server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    address: { host: options.host, port: bound.port },
    app,
    close() {
      closing ??= (async () => {
        const grace = setTimeout(() => app.server.closeAllConnections(), 3_000);
        try {
          await app.close();
        } finally {
          clearTimeout(grace);
        }
      })();
      return closing;
    },
  };
}
