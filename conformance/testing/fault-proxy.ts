// Test support: an HTTP proxy in front of a real node that breaks one thing on purpose (drops a field, serves a
// removed path, renames a metric back), so that a test can show the suite catches each break with a precise row.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** Rewrites an answer of the node; `undefined` from `respond` forwards the request untouched. */
export interface Fault {
  /** Answers instead of the node (a path the node does not serve). */
  readonly respond?: (method: string, path: string) => ProxiedAnswer | undefined;
  /** Rewrites the node's answer. */
  readonly rewrite?: (method: string, path: string, answer: ProxiedAnswer) => ProxiedAnswer;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export class FaultProxy {
  fault: Fault = {};

  private constructor(
    private readonly server: Server,
    readonly upstream: string,
  ) {}

  static async start(upstream: string): Promise<FaultProxy> {
    const server = createServer();
    const proxy = new FaultProxy(server, upstream);
    server.on('request', (request, response) => {
      void (async () => {
        const method = request.method ?? 'GET';
        const url = request.url ?? '/';
        const path = url.split('?')[0]!;
        const body = await bodyOf(request);
        let answer = proxy.fault.respond?.(method, path);
        if (answer === undefined) {
          const headers: Record<string, string> = {};
          for (const name of ['content-type', 'authorization'])
            if (typeof request.headers[name] === 'string') headers[name] = request.headers[name];
          const upstreamAnswer = await fetch(`${upstream}${url}`, {
            method,
            headers,
            ...(body.length > 0 ? { body } : {}),
          });
          answer = {
            status: upstreamAnswer.status,
            contentType: upstreamAnswer.headers.get('content-type') ?? '',
            body: await upstreamAnswer.text(),
          };
          answer = proxy.fault.rewrite?.(method, path, answer) ?? answer;
        }
        response.writeHead(
          answer.status,
          answer.contentType === '' ? {} : { 'content-type': answer.contentType },
        );
        response.end(answer.body);
      })().catch((error: unknown) => {
        response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(String(error));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
