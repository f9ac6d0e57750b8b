import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { AuthScheme } from './auth.ts';

/**
 * The project's OpenAPI documents (openapi/svc-master-v1.yaml, openapi/svc-worker-v1.yaml) and the JSON schemas
 * derived from them. Every /api/v1 route takes its request and response schemas from here, so the routes cannot
 * drift from the document that /openapi.json serves and the tests validate against.
 */

export type JsonSchema = { readonly [keyword: string]: unknown };

export interface OpenApiOperation {
  readonly operationId?: string;
  readonly description?: string;
  readonly parameters?: readonly OpenApiParameter[];
  readonly requestBody?: {
    readonly required?: boolean;
    readonly content: Readonly<Record<string, { readonly schema: JsonSchema }>>;
  };
  readonly responses: Readonly<Record<string, OpenApiResponse | { readonly $ref: string }>>;
}

export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'query' | 'path' | 'header' | 'cookie';
  readonly required?: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

export interface OpenApiResponse {
  readonly description: string;
  readonly content?: Readonly<Record<string, { readonly schema: JsonSchema }>>;
}

export interface OpenApiDocument {
  readonly openapi: string;
  readonly info: { readonly title: string; readonly version: string };
  readonly paths: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly responses?: Readonly<Record<string, OpenApiResponse>>;
    readonly securitySchemes?: Readonly<Record<string, unknown>>;
  };
  /** Alternatives, each a map of scheme name to scopes; `{}` is anonymous access. */
  readonly security?: readonly Readonly<Record<string, readonly string[]>>[];
}

const FILES: Readonly<Record<HttpRole, URL>> = {
  master: new URL('./openapi/svc-master-v1.yaml', import.meta.url),
  worker: new URL('./openapi/svc-worker-v1.yaml', import.meta.url),
};

const DOCUMENTS = new Map<HttpRole, { readonly text: string; readonly document: OpenApiDocument }>();

function load(role: HttpRole): { readonly text: string; readonly document: OpenApiDocument } {
  let loaded = DOCUMENTS.get(role);
  if (loaded === undefined) {
    const text = readFileSync(FILES[role], 'utf8');
    loaded = { text, document: parse(text) as OpenApiDocument };
    DOCUMENTS.set(role, loaded);
  }
  return loaded;
}

/** The role's OpenAPI document, as parsed from its YAML file. */
export function openApiDocument(role: HttpRole): OpenApiDocument {
  return load(role).document;
}

/** The document's name for each authentication scheme of the management interface. */
const SECURITY_SCHEME: Readonly<Record<AuthScheme, string>> = { BASIC: 'basicAuth', BEARER: 'bearerAuth' };

/**
 * The document as a server serves it (/openapi.json, Swagger UI): `security` names exactly the schemes this server
 * accepts, or anonymous access when it accepts none, so that generated clients and Swagger's Authorize offer the
 * right ones.
 */
export function servedOpenApiDocument(role: HttpRole, schemes: readonly AuthScheme[]): OpenApiDocument {
  const security =
    schemes.length === 0 ? [{}] : schemes.map((scheme) => ({ [SECURITY_SCHEME[scheme]]: [] as string[] }));
  return { ...openApiDocument(role), security };
}

/** The role's OpenAPI document as YAML text, exactly as kept in the repository. */
export function openApiYaml(role: HttpRole): string {
  return load(role).text;
}

/** The `$id` under which the role's component schemas are registered (fastify's addSchema, or an Ajv instance). */
export function schemaSetId(role: HttpRole): string {
  return `svc-${role}-v1`;
}

const OPENAPI_ONLY_KEYWORDS = new Set(['example', 'xml', 'externalDocs', 'discriminator', 'deprecated']);
const COMPONENT_REF = '#/components/schemas/';

/**
 * An OpenAPI 3.0 schema object as a JSON schema (draft-07): component references point into `definitions`,
 * `nullable` becomes a union with null, and keywords JSON Schema does not know are left out.
 */
export function toJsonSchema(node: unknown, refPrefix = '#/definitions/'): unknown {
  if (Array.isArray(node)) return node.map((item) => toJsonSchema(item, refPrefix));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  const source = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(source)) {
    if (OPENAPI_ONLY_KEYWORDS.has(key) || key === 'nullable') continue;
    if (key === '$ref' && typeof value === 'string' && value.startsWith(COMPONENT_REF)) {
      out.$ref = `${refPrefix}${value.slice(COMPONENT_REF.length)}`;
    } else if (key === 'properties' || key === 'definitions') {
      // Names of properties are data, not keywords: keep every one of them.
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, schema]) => [
          name,
          toJsonSchema(schema, refPrefix),
        ]),
      );
    } else {
      out[key] = toJsonSchema(value, refPrefix);
    }
  }
  if (source.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/** Every component schema of the role's document as one JSON schema with `$id` schemaSetId(role). */
export function componentSchemaSet(role: HttpRole): JsonSchema {
  return {
    $id: schemaSetId(role),
    definitions: toJsonSchema(openApiDocument(role).components.schemas),
  };
}

/** A reference, from outside the set, to one component schema of the role's document. */
export function componentRef(role: HttpRole, name: string): JsonSchema {
  return { $ref: `${schemaSetId(role)}#/definitions/${name}` };
}

/** What a route needs from its operation in the document. */
export interface RouteSchemas {
  readonly operation: OpenApiOperation;
  /** JSON schema of the body, when the operation takes one. */
  readonly body?: JsonSchema;
  readonly bodyRequired: boolean;
  /** Media types the body may have. */
  readonly accepts: readonly string[];
  /** The query parameters as one object schema (no other parameter is allowed). */
  readonly querystring: JsonSchema;
  /** Response schemas by status code. */
  readonly responses: Readonly<Record<string, JsonSchema>>;
}

function resolveResponse(
  document: OpenApiDocument,
  response: OpenApiResponse | { readonly $ref: string },
): OpenApiResponse {
  if ('$ref' in response) {
    const name = response.$ref.replace('#/components/responses/', '');
    const found = document.components.responses?.[name];
    if (found === undefined) throw new Error(`the OpenAPI document lacks response ${response.$ref}`);
    return found;
  }
  return response;
}

/** The schemas of operation `method path` of the role's document; throws when the document lacks it. */
export function routeSchemas(role: HttpRole, method: string, path: string): RouteSchemas {
  const document = openApiDocument(role);
  const operation = document.paths[path]?.[method.toLowerCase()];
  if (operation === undefined) {
    throw new Error(`${method} ${path} is served by the ${role} but missing from its OpenAPI document`);
  }
  const convert = (schema: JsonSchema): JsonSchema =>
    toJsonSchema(schema, `${schemaSetId(role)}#/definitions/`) as JsonSchema;
  const responses: Record<string, JsonSchema> = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    const schema = resolveResponse(document, response).content?.['application/json']?.schema;
    if (schema !== undefined) responses[status] = convert(schema);
  }
  const query = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query');
  const querystring: JsonSchema = {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(query.map((parameter) => [parameter.name, convert(parameter.schema)])),
    required: query.filter((parameter) => parameter.required === true).map((parameter) => parameter.name),
  };
  const content = operation.requestBody?.content ?? {};
  const accepts = Object.keys(content);
  const bodySchema = accepts.length > 0 ? content[accepts[0]!]?.schema : undefined;
  return {
    operation,
    ...(bodySchema === undefined ? {} : { body: convert(bodySchema) }),
    bodyRequired: operation.requestBody?.required === true,
    accepts,
    querystring,
    responses,
  };
}

/** Every `METHOD path` the role's document describes. */
export function documentedOperations(role: HttpRole): readonly string[] {
  const document = openApiDocument(role);
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
  );
}
