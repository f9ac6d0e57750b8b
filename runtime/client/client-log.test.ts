// The library's log lines stay off the application's stdout: by default warnings and errors go to stderr as JSON
// lines; a logger the application hands in gets them instead, at the level asked for. A master nobody listens at
// makes the lifecycle manager warn on every retry: a real warning from real sockets.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startApplication } from './application.ts';
import { clientLogger, type ClientLogger } from './client-log.ts';
import { ApplicationRefusedError } from './errors.ts';
import { PUSH_MOVED_EVENT } from '../../core/machines/client/map-task.ts';
import { closedPort } from '../testing/closed-port.ts';
import { pollFor } from '../testing/poll.ts';

const run = promisify(execFile);

type Line = { method: string; fields: Record<string, unknown>; message: string };

/** A minimal application logger (warn and error only, as the interface allows) that keeps what it is given. */
function keepingLogger(lines: Line[], withInfo = false): ClientLogger {
  const keep = (method: string) => (fields: Record<string, unknown>, message: string) =>
    lines.push({ method, fields, message });
  return {
    warn: keep('warn'),
    error: keep('error'),
    ...(withInfo ? { info: keep('info'), debug: keep('debug') } : {}),
  };
}

describe('the client library’s logging', () => {
  it('writes nothing to stdout by default, and its warnings to stderr as JSON lines', async () => {
    const port = await closedPort();
    const application = path.join(import.meta.dirname, 'application.ts');
    const script = [
      `const { startApplication } = await import(${JSON.stringify(application)});`,
      `await startApplication({ master: 'svc://127.0.0.1:${port}', conf: { 'svc.rpc.askTimeout': '2s' } })`,
      "  .then(() => process.exit(3), (error) => process.stderr.write('rejected: ' + error.name + '\\n'));",
    ].join('\n');
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: path.resolve(import.meta.dirname, '../..') },
    );
    assert.equal(stdout, '', 'the application’s stdout is its own');
    const lines = stderr.trimEnd().split('\n');
    assert.equal(lines.at(-1), 'rejected: ApplicationRefusedError');
    const logged = lines.slice(0, -1).map((line) => JSON.parse(line) as { level: number; msg: string });
    assert.ok(
      logged.some((line) => line.level === 40 && /master unreachable/.test(line.msg)),
      `a warning on stderr: ${stderr}`,
    );
    assert.ok(
      logged.every((line) => line.level >= 40),
      'warnings and errors only by default',
    );
    // The driver names its node in each line, as the logger's base does: the key appears once.
    for (const line of lines.slice(0, -1)) assert.equal(line.split('"node":').length, 2, line);
  });

  it('hands its lines to the application’s logger instead, warnings only unless asked for more', async () => {
    const port = await closedPort();
    const lines: Line[] = [];
    await assert.rejects(
      startApplication({
        master: `svc://127.0.0.1:${port}`,
        logger: keepingLogger(lines),
        conf: { 'svc.rpc.askTimeout': '2s' },
      }),
      ApplicationRefusedError,
    );
    const warning = lines.find((line) => /master unreachable/.test(line.message));
    assert.ok(warning !== undefined, JSON.stringify(lines));
    assert.equal(warning.method, 'warn');
    assert.equal(warning.fields.role, 'lifecycle-manager');
    assert.ok(
      lines.every((line) => line.method === 'warn' || line.method === 'error'),
      "lines.every((line) => line.method === 'warn' || line.method === 'error')",
    );
  });

  it('passes info and debug lines only at those levels, and only to a logger that has the methods', () => {
    const lines: Line[] = [];
    const info = clientLogger(keepingLogger(lines, true), 'info', { node: 'n' });
    info.debug({ event: 'a' }, 'debug line');
    info.info({ event: 'b' }, 'info line');
    info.error({ event: 'c' }, 'error line');
    assert.deepEqual(
      lines.map((line) => [line.method, line.message, line.fields.event, line.fields.node]),
      [
        ['info', 'info line', 'b', 'n'],
        ['error', 'error line', 'c', 'n'],
      ],
    );
    lines.length = 0;
    const minimal = clientLogger(keepingLogger(lines), 'debug', {});
    minimal.info({}, 'dropped: the logger has no info');
    minimal.warn({}, 'kept');
    assert.deepEqual(
      lines.map((line) => line.message),
      ['kept'],
    );
    assert.throws(() => clientLogger({} as ClientLogger, undefined, {}), /needs warn\(fields, message\)/);
  });
  it('summarises expected moves: the first of each cause in an interval, then one log.repeated line', async () => {
    const lines: Line[] = [];
    const logger = clientLogger(keepingLogger(lines, true), 'info', { role: 'executor' }, 50);
    for (let push = 0; push < 41; push += 1)
      logger.info({ event: PUSH_MOVED_EVENT, cause: 'HARD_SPLIT', partitionId: push }, PUSH_MOVED_EVENT);
    logger.warn(
      { event: 'push failed; retrying', cause: 'PUSH_DATA_TIMEOUT_PRIMARY' },
      'push failed; retrying',
    );
    const summary = await pollFor(
      () => lines.find((line) => line.fields.event === 'log.repeated'),
      () => `a log.repeated line among ${JSON.stringify(lines)}`,
    );
    assert.equal(summary.method, 'info');
    assert.equal(summary.fields.count, 40);
    assert.equal(summary.fields.repeatedEvent, PUSH_MOVED_EVENT);
    assert.deepEqual(
      lines.filter((line) => line.fields.event === PUSH_MOVED_EVENT).map((line) => line.method),
      ['info'],
    );
    assert.equal(lines.filter((line) => line.method === 'warn').length, 1, 'other warnings are untouched');
  });
});
