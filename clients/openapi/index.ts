// svc-openapi-client: typed clients of the management interface (/api/v1) of an svc master and worker, from the
// types openapi-typescript generates out of runtime/http/openapi/svc-{master,worker}-v1.yaml (master-v1.ts,
// worker-v1.ts) and openapi-fetch. Every call answers {data} (the 2xx body) or {error} (the server's
// {message}) with the raw `response`; a node that cannot be reached rejects (fetch's TypeError).
import createClient, { type Client, type ClientOptions as FetchClientOptions } from 'openapi-fetch';
import type { components as MasterComponents, paths as MasterPaths } from './master-v1.ts';
import type { components as WorkerComponents, paths as WorkerPaths } from './worker-v1.ts';

export type { MasterPaths, WorkerPaths };
/** The master document's schemas by name (`MasterSchemas['WorkersResponse']`, `MasterSchemas['WorkerId']`, …). */
export type MasterSchemas = MasterComponents['schemas'];
/** The worker document's schemas by name (`WorkerSchemas['WorkerInfoResponse']`, …). */
export type WorkerSchemas = WorkerComponents['schemas'];
export type MasterClient = Client<MasterPaths>;
export type WorkerClient = Client<WorkerPaths>;

/** Credentials for a node whose management interface asks for them (`svc.<role>.http.auth.*`). */
export type Auth = { readonly user: string; readonly password: string } | { readonly token: string };

export interface ClientOptions {
  /** Basic `user:password` or a bearer token, sent as `Authorization` with every request. */
  readonly auth?: Auth;
  /** More headers for every request (an `Authorization` here wins over `auth`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Another fetch (tests, proxies); default the global one. */
  readonly fetch?: FetchClientOptions['fetch'];
  /** Give up on a request after this many milliseconds (it then rejects with a TimeoutError); default never. */
  readonly timeoutMs?: number;
}

/** The `Authorization` header of `auth`: `Basic base64(user:password)` or `Bearer <token>`. */
export function authorization(auth: Auth): string {
  if ('token' in auth) return `Bearer ${auth.token}`;
  return `Basic ${Buffer.from(`${auth.user}:${auth.password}`, 'utf8').toString('base64')}`;
}

/**
 * The node's address as the client takes it: `http(s)://host:port`, without a trailing slash or `/api/v1` (the
 * documents' paths carry the `/api/v1` prefix themselves), so an address as `svc demo --keep` prints it works too.
 */
export function nodeBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`${baseUrl}: expected an http:// or https:// address`);
  const pathname = url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
  return `${url.origin}${pathname}`;
}

function fetchOptions(baseUrl: string, options: ClientOptions): FetchClientOptions {
  const headers: Record<string, string> = {
    ...(options.auth === undefined ? {} : { Authorization: authorization(options.auth) }),
    ...options.headers,
  };
  const timeoutMs = options.timeoutMs;
  const base = options.fetch ?? ((request: Request) => fetch(request));
  return {
    baseUrl: nodeBaseUrl(baseUrl),
    headers,
    fetch:
      timeoutMs === undefined
        ? base
        : (request) => base(new Request(request, { signal: AbortSignal.timeout(timeoutMs) })),
  };
}

/** A typed client of a master's `/api/v1` at `baseUrl` (`http://host:port`). */
export function masterClient(baseUrl: string, options: ClientOptions = {}): MasterClient {
  return createClient<MasterPaths>(fetchOptions(baseUrl, options));
}

/** A typed client of a worker's `/api/v1` at `baseUrl` (`http://host:port`). */
export function workerClient(baseUrl: string, options: ClientOptions = {}): WorkerClient {
  return createClient<WorkerPaths>(fetchOptions(baseUrl, options));
}

/** The message of an error answer: the server's `{message}`, else its text, else the status line. */
export function errorMessage(error: unknown, response: Response): string {
  if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string')
    return error.message;
  if (typeof error === 'string' && error.trim() !== '') return error.trim();
  return `${response.status} ${response.statusText}`.trim();
}
