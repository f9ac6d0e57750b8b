// Test support: validates management-interface responses against the project's OpenAPI documents (Ajv, strict).
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { HttpRole } from '../../../core/release/legacy-endpoints.ts';
import { componentSchemaSet, routeSchemas, type JsonSchema } from '../openapi.ts';

// ajv-formats is CommonJS with a default export; under NodeNext its default import is the module object.
const addFormats = addFormatsModule.default;

/** Every object schema that lists its properties and says nothing of others is closed to others. */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === 'properties' || key === 'definitions'
        ? Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, closed(v)]))
        : closed(value);
  }
  if (out.properties !== undefined && out.additionalProperties === undefined)
    out.additionalProperties = false;
  return out;
}

export interface ResponseValidator {
  /** Ajv's errors as text, or undefined when `body` is a valid `status` response of `method path`. */
  check(method: string, path: string, status: number, body: unknown): string | undefined;
}

/**
 * A validator of the role's responses. `closedObjects`: objects may carry no field the document does not list (for
 * projections before serialization, which would silently drop such a field).
 */
export function responseValidator(
  role: HttpRole,
  options: { closedObjects?: boolean } = {},
): ResponseValidator {
  const ajv = new Ajv({ strict: true, allErrors: true });
  addFormats(ajv);
  const set = componentSchemaSet(role);
  ajv.addSchema((options.closedObjects === true ? closed(set) : set) as JsonSchema);
  const compiled = new Map<string, ValidateFunction>();
  return {
    check(method, path, status, body) {
      const key = `${method} ${path} ${status}`;
      let validate = compiled.get(key);
      if (validate === undefined) {
        const schema = routeSchemas(role, method, path).responses[String(status)];
        if (schema === undefined) return `the document has no ${status} response for ${method} ${path}`;
        validate = ajv.compile(options.closedObjects === true ? (closed(schema) as JsonSchema) : schema);
        compiled.set(key, validate);
      }
      return validate(body) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'response' });
    },
  };
}
