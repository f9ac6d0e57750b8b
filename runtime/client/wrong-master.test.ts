// A wrong master address is reported after one request timeout, not after three (core/machines/lifecycle-manager,
// registration retries). Real sockets: a port that was just closed refuses connections.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startApplication } from './application.ts';
import { ApplicationRefusedError } from './errors.ts';
import { closedPort } from '../testing/closed-port.ts';

describe('startApplication with a master nobody listens at', () => {
  it('rejects after its registration retries with an error that says what to check', async () => {
    const port = await closedPort();
    await assert.rejects(
      startApplication({
        master: `svc://127.0.0.1:${port}`,
        logLevel: 'silent',
        // The retries end one request timeout after the first failure: a short one keeps the test short.
        conf: { 'svc.rpc.askTimeout': '3s' },
      }),
      (error: unknown) => {
        assert.ok(error instanceof ApplicationRefusedError, String(error));
        assert.equal(error.status, 'REQUEST_FAILED');
        assert.match(error.message, /could not reach the master .* for 3 s \(3 tries/);
        assert.match(error.message, /svc\.master\.endpoints/);
        assert.match(
          error.message,
          new RegExp(`The last connection failed: 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
        );
        return true;
      },
    );
  });
});
