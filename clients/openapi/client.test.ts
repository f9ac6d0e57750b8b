// The committed types are what openapi-typescript makes of the documents today (regenerated into a temporary
// directory by the very command the README gives, and compared), so the documents and the client cannot drift;
// and the client's own helpers: the node's address, the Authorization header.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { GENERATED } from './generate.ts';
import { authorization, errorMessage, nodeBaseUrl } from './index.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

describe('svc-openapi-client', () => {
  it('the generated types are current with runtime/http/openapi/*.yaml', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'svc-openapi-client-'));
    try {
      await new Promise<void>((resolve, reject) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', path.join(here, 'generate.ts'), '--out', out],
          { timeout: 120_000 },
          (error, _stdout, stderr) =>
            error === null ? resolve() : reject(new Error(`${error.message}\n${stderr}`)),
        ),
      );
      for (const { file, document } of GENERATED) {
        assert.equal(
          readFileSync(path.join(here, file), 'utf8'),
          readFileSync(path.join(out, file), 'utf8'),
          `clients/openapi/${file} is stale: ${path.basename(document)} changed; regenerate with ` +
            '`node --import tsx clients/openapi/generate.ts` and commit the result',
        );
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('takes a node address with or without /api/v1 and a trailing slash', () => {
    assert.equal(nodeBaseUrl('http://127.0.0.1:9098'), 'http://127.0.0.1:9098');
    assert.equal(nodeBaseUrl('http://127.0.0.1:9098/'), 'http://127.0.0.1:9098');
    assert.equal(nodeBaseUrl('http://127.0.0.1:9098/api/v1'), 'http://127.0.0.1:9098');
    assert.equal(nodeBaseUrl('https://node.example:443/proxy/api/v1/'), 'https://node.example/proxy');
    assert.throws(() => nodeBaseUrl('svc://127.0.0.1:9097'), /expected an http:\/\/ or https:\/\/ address/);
  });

  it('builds the Authorization header of basic credentials and of a token', () => {
    assert.equal(authorization({ user: 'ops', password: 'p:w' }), `Basic ${btoa('ops:p:w')}`);
    assert.equal(authorization({ token: 'abc' }), 'Bearer abc');
  });

  it('reads the server’s {message} of an error answer, else its status', () => {
    const response = new Response(null, { status: 503, statusText: 'Service Unavailable' });
    assert.equal(errorMessage({ message: 'stopping' }, response), 'stopping');
    assert.equal(errorMessage('plain text\n', response), 'plain text');
    assert.equal(errorMessage(undefined, response), '503 Service Unavailable');
  });
});
