// Test support: plain HTTP requests on loopback (node:http, so that any method, path, header and body can be sent).
import { Agent, request } from 'node:http';
import { pollFor } from '../../testing/poll.ts';

export interface RawRequest {
  readonly method: string;
  /** Sent as is: path and query string, unencoded characters included. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
  /** The body parsed as JSON, when it is JSON. */
  readonly json: unknown;
}

// No keep-alive: an idle connection would hold the test process open after its servers stopped.
const agent = new Agent({ keepAlive: false });

/** One request to `base` (`http://127.0.0.1:port`); rejects only when the server does not answer at all. */
export function send(base: string, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers: {
          ...(req.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(req.body)) }),
          ...req.headers,
        },
        agent,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
        });
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () =>
      outgoing.destroy(new Error(`${req.method} ${req.path}: no answer in ${timeoutMs} ms`)),
    );
    outgoing.on('error', reject);
    if (req.body !== undefined) outgoing.write(req.body);
    outgoing.end();
  });
}

export function getJson(base: string, path: string): Promise<RawResponse> {
  return send(base, { method: 'GET', path, headers: { accept: 'application/json' } });
}

export function postJson(base: string, path: string, body: unknown): Promise<RawResponse> {
  return send(base, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

export function postForm(
  base: string,
  path: string,
  form: Readonly<Record<string, string>>,
): Promise<RawResponse> {
  return send(base, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

/**
 * Polls `probe` until it returns a value (not undefined), `intervalMs` apart, for at most `timeoutMs`; rejects with
 * `what` when it never does. A bounded wait on an observable condition, not a sleep (runtime/testing/poll.ts).
 */
export function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { timeoutMs = 10_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  return pollFor(probe, () => what, { timeoutMs, intervalMs });
}
