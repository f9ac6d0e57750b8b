// Starting Prometheus: readiness is its log, whose "ready" and "Listening on" lines come from two goroutines in
// either order (a CI run had "ready" first and waited out its deadline). A stand-in binary writes them both ways.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { PrometheusRun } from './server.ts';

const READY = 'ts=0 caller=main.go:973 level=info msg="Server is ready to receive web requests."';
const LISTENING =
  'ts=0 caller=tls_config.go:232 level=info component=web msg="Listening on" address=127.0.0.1:45678';

describe('starting Prometheus', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-fake-prometheus-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A stand-in that writes `lines` to stderr and then stays up until it is stopped. */
  function fakeBinary(name: string, lines: readonly string[]): string {
    const file = path.join(dir, name);
    const script = `for (const line of ${JSON.stringify(lines)}) process.stderr.write(line + '\\n');\nsetInterval(() => {}, 1000);\n`;
    writeFileSync(file, `#!${process.execPath}\n${script}`);
    chmodSync(file, 0o755);
    return file;
  }

  for (const [order, lines] of [
    ['listening, then ready', [LISTENING, READY]],
    ['ready, then listening', [READY, LISTENING]],
  ] as const) {
    it(`is ready once both lines came, ${order}`, async () => {
      const run = await PrometheusRun.start({
        binary: fakeBinary(order.replace(/\W+/g, '-'), lines),
        targets: [],
        startupMs: 20_000,
      });
      try {
        assert.equal(run.url, 'http://127.0.0.1:45678');
      } finally {
        await run.stop();
      }
    });
  }
});
