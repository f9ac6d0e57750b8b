// A handler that fails answers 500 without its internal message (paths, peers, stacks stay in the server's log),
// naming the request so that an operator can find its cause there.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../log.ts';
import { masterApi } from './master-api.ts';
import { buildManagementServer, type ManagementApi } from './server.ts';
import { confAt, masterStateAt, StubDriver } from './testing/fixtures.ts';

const SECRET = 'cannot open /var/lib/svc/state/secret.db: EACCES';

function failingApi(): ManagementApi {
  const conf = confAt('master', '0.6.0');
  const api = masterApi({
    driver: new StubDriver(masterStateAt(conf)),
    conf,
    self: { nodeId: 'master-0', rpcAddress: '127.0.0.1:9097' },
  });
  return {
    ...api,
    routes: api.routes.map((route) =>
      route.method === 'GET' && route.path === '/api/v1/workers'
        ? {
            ...route,
            handle: () => {
              throw new Error(SECRET);
            },
          }
        : route,
    ),
  };
}

describe('an internal error of the management interface', () => {
  it('answers 500 naming the request, and logs the cause only in the server’s log', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const api = failingApi();
    const app = await buildManagementServer({ api, logger: createLogger('info', { role: 'master' }, sink) });
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/workers' });
      assert.equal(response.statusCode, 500);
      const { message } = response.json<{ message: string }>();
      assert.doesNotMatch(message, /secret\.db|EACCES/, 'the internal message stays in the log');
      const logged = lines.find((line) => line.event === 'http.error');
      assert.ok(logged !== undefined, 'the cause is logged');
      assert.match(String(logged.error), /secret\.db/);
      assert.ok(message.includes(String(logged.requestId)), `the answer names the request: ${message}`);
    } finally {
      await app.close();
      api.close?.();
    }
  });
});
