import { editDistance } from '../../conf/registry/nearest.ts';

/**
 * The management interface's errors: JSON `{message}` with a precise status. Bad input is always a 4xx whose
 * message names the field and the form expected; 5xx is kept for the server's own failures (and 503 for a feature
 * that is off or a node that is stopping).
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** The subset of an Ajv error that messages are built from. */
export interface SchemaError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly message?: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/** `body.add[0].rpcPort` from context `body` and JSON pointer `/add/0/rpcPort`. */
export function fieldName(context: string, instancePath: string): string {
  let name = context;
  for (const segment of instancePath.split('/').slice(1)) {
    const unescaped = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    name += /^\d+$/.test(unescaped) ? `[${unescaped}]` : `.${unescaped}`;
  }
  return name;
}

function quoted(values: unknown): string {
  return Array.isArray(values) ? values.map((value) => JSON.stringify(value)).join(', ') : String(values);
}

/**
 * One schema violation as `field: what is wrong; expected form`. `describe` gives the expected form of a field
 * (from the schema) where the error itself does not say it.
 */
export function schemaErrorMessage(context: string, error: SchemaError): string {
  const field = fieldName(context, error.instancePath);
  const params = error.params;
  switch (error.keyword) {
    case 'required':
      return `${field}.${String(params.missingProperty)} is required`;
    case 'additionalProperties':
      return (
        `${field}: unknown field '${String(params.additionalProperty)}'` +
        (context === 'querystring' ? ' (no such query parameter)' : '')
      );
    case 'type':
      return `${field}: expected ${String(params.type)}`;
    case 'enum':
      return `${field}: expected one of ${quoted(params.allowedValues)}`;
    case 'format':
      return `${field}: expected format ${String(params.format)}${formatHint(String(params.format))}`;
    case 'minimum':
    case 'maximum':
      return `${field}: expected a number ${String(params.comparison)} ${String(params.limit)}`;
    case 'minItems':
      return `${field}: expected at least ${String(params.limit)} item(s)`;
    case 'pattern':
      return `${field}: expected text matching ${String(params.pattern)}`;
    default:
      return `${field}: ${error.message ?? error.keyword}`;
  }
}

function formatHint(format: string): string {
  switch (format) {
    case 'int32':
      return ' (a whole number from -2147483648 to 2147483647)';
    case 'int64':
      return ' (a whole number)';
    default:
      return '';
  }
}

/** The path among `candidates` nearest to `path` (case-insensitive edit distance, prefixes preferred). */
export function nearestPath(path: string, candidates: readonly string[]): string | undefined {
  const wanted = path.toLowerCase().replace(/\/+$/, '') || '/';
  let best: { path: string; score: number } | undefined;
  for (const candidate of candidates) {
    const lower = candidate.toLowerCase();
    let score = editDistance(wanted, lower);
    // A path under or above a valid one (a missing or extra segment) is nearer than its edit distance says.
    if (lower.startsWith(`${wanted}/`) || wanted.startsWith(`${lower}/`)) score = Math.min(score, 2);
    if (best === undefined || score < best.score) best = { path: candidate, score };
  }
  return best?.path;
}

/** The media type of a Content-Type header, lower case, without parameters; undefined when absent. */
export function mediaTypeOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const type = header.split(';')[0]!.trim().toLowerCase();
  return type === '' ? undefined : type;
}
