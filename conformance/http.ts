// The suite's one way to talk HTTP to a deployment: every answer comes back with a line of evidence (the request,
// the status, the media type) for the row it decides.
import type { Target } from './report/row.ts';

export interface Answer {
  readonly status: number;
  /** The response's media type without parameters (`application/json`), or '' when it has none. */
  readonly mediaType: string;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown;
  /** `GET http://…/path -> 200 application/json`. */
  readonly evidence: string;
}

export interface RequestOptions {
  readonly method?: string;
  readonly body?: string;
  readonly contentType?: string;
  /** Send the target's credentials (default true); false probes what an anonymous caller gets. */
  readonly credentials?: boolean;
  readonly timeoutMs?: number;
}

/** What every request of the suite waits at most; a node that does not answer in time fails the row. */
export const REQUEST_TIMEOUT_MS = 15_000;

function authorization(target: Target): Record<string, string> {
  if (target.auth === undefined) return {};
  const token = Buffer.from(`${target.auth.user}:${target.auth.password}`).toString('base64');
  return { authorization: `Basic ${token}` };
}

export async function request(
  target: Target,
  base: string,
  path: string,
  options: RequestOptions = {},
): Promise<Answer> {
  const method = options.method ?? 'GET';
  const url = `${base.replace(/\/+$/, '')}${path}`;
  const headers: Record<string, string> = {
    ...(options.credentials === false ? {} : authorization(target)),
    ...(options.contentType === undefined ? {} : { 'content-type': options.contentType }),
  };
  const response = await fetch(url, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
    signal: AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const sent = options.contentType === undefined ? '' : ` (${options.contentType})`;
  return {
    status: response.status,
    mediaType,
    headers: response.headers,
    text,
    json,
    evidence: `${method} ${url}${sent} -> ${response.status} ${mediaType || '(no media type)'}`,
  };
}

/** The first line of a body, shortened, for evidence. */
export function excerpt(text: string, max = 160): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** A form body (`a=1&b=2`). */
export function formBody(params: Readonly<Record<string, string>>): string {
  return new URLSearchParams(params).toString();
}
