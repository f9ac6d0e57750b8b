// Validates /api/v1 answers against the OpenAPI document the deployment itself serves (Ajv). The document is the
// deployment's claim; the suite checks the answers keep it, and separately checks the contract's field names.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS with a default export; under NodeNext its default import is the module object.
const addFormats = addFormatsModule.default;

export interface ServedDocument {
  /** Ajv's errors as text, undefined when `body` is a valid `status` answer of `method path`. */
  check(method: string, path: string, status: number, body: unknown): string | undefined;
  /** Whether the document declares `method path`. */
  declares(method: string, path: string): boolean;
}

function pointerSegment(text: string): string {
  return text.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function servedDocument(document: unknown): ServedDocument {
  const doc = document as { paths?: Record<string, Record<string, unknown>> };
  // OpenAPI 3.0 schemas carry keywords JSON Schema does not know (nullable, example): not strict, and the document
  // itself is not validated as a JSON Schema.
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(document as object, 'served-openapi');
  const compiled = new Map<string, ValidateFunction>();
  return {
    declares(method, path) {
      return doc.paths?.[path]?.[method.toLowerCase()] !== undefined;
    },
    check(method, path, status, body) {
      const operation = doc.paths?.[path]?.[method.toLowerCase()] as
        { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> } | undefined;
      if (operation === undefined) return `the served document does not declare ${method} ${path}`;
      const response = operation.responses?.[String(status)] ?? operation.responses?.default;
      if (response === undefined) return `the served document has no ${status} answer for ${method} ${path}`;
      const media = response.content?.['application/json'];
      if (media?.schema === undefined)
        return `the served document gives no application/json schema for ${method} ${path} ${status}`;
      const key = `${method} ${path} ${status}`;
      let validate = compiled.get(key);
      if (validate === undefined) {
        const statusKey = operation.responses?.[String(status)] === undefined ? 'default' : String(status);
        const pointer = [
          'paths',
          path,
          method.toLowerCase(),
          'responses',
          statusKey,
          'content',
          'application/json',
          'schema',
        ]
          .map(pointerSegment)
          .join('/');
        validate = ajv.compile({ $ref: `served-openapi#/${pointer}` });
        compiled.set(key, validate);
      }
      return validate(body) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'response' });
    },
  };
}
