// The log's two promises under attack: no key twice in a line, and repeated causes summarised per interval.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from './log.ts';
import { RepeatedLog } from './log-repeats.ts';

/** A logger writing into an array of raw lines. */
function capture(base: Record<string, unknown>): {
  logger: ReturnType<typeof createLogger>;
  lines: string[];
} {
  const lines: string[] = [];
  const logger = createLogger('info', base, { write: (text: string) => void lines.push(text) });
  return { logger, lines };
}

/** The keys of a JSON object line, in order, as written (JSON.parse would hide a repeated one). */
function keysOf(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let inString = false;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i]!;
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '{') depth += 1;
    else if (c === '}') depth -= 1;
    else if (c === '"') {
      // svc's keys hold no escapes: a key is a quoted run followed by a colon; anything else is a value.
      const end = line.indexOf('"', i + 1);
      if (line[end + 1] !== ':') {
        inString = true;
        continue;
      }
      if (depth === 1) keys.push(line.slice(i + 1, end));
      i = end;
    }
  }
  return keys;
}

describe('log lines', () => {
  it('carry role and node once, the line’s own value winning over the process’s', () => {
    const { logger, lines } = capture({ role: 'worker', node: 'worker-0' });
    logger.info({ event: 'a', node: 'host:1:2:3:4', role: 'worker' }, 'own values');
    logger.info({ event: 'b' }, 'defaults');
    logger.child({}, { level: 'info' }).info({ event: 'c', node: 'n' }, 'a child');
    for (const line of lines) {
      const keys = keysOf(line);
      assert.equal(new Set(keys).size, keys.length, `a key twice in ${line}`);
    }
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(
      parsed.map((line) => [line.role, line.node]),
      [
        ['worker', 'host:1:2:3:4'],
        ['worker', 'worker-0'],
        ['worker', 'n'],
      ],
    );
  });

  it('write a cause three times per interval and count the rest into one summary with an example peer', () => {
    const { logger, lines } = capture({ role: 'master' });
    const repeated = new RepeatedLog(logger, { intervalMs: 60_000 });
    for (let i = 0; i < 500; i += 1) {
      repeated.warn(
        'noHandshake',
        { event: 'transport.connectionClosed', service: 'rpc', peer: `10.0.0.1:${1000 + i}` },
        'closed',
      );
    }
    repeated.warn(
      'oversized',
      { event: 'transport.connectionClosed', service: 'rpc', peer: 'x:1' },
      'other cause',
    );
    repeated.flush();
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(parsed.length, 5, lines.join('\n'));
    assert.deepEqual(
      parsed.map((line) => line.cause),
      ['noHandshake', 'noHandshake', 'noHandshake', 'oversized', 'noHandshake'],
    );
    const summary = parsed.at(-1)!;
    assert.equal(summary.event, 'log.repeated');
    assert.equal(summary.repeatedEvent, 'transport.connectionClosed');
    assert.equal(summary.count, 497);
    assert.equal(summary.examplePeer, '10.0.0.1:1003');
    // A new interval starts afresh.
    repeated.warn(
      'noHandshake',
      { event: 'transport.connectionClosed', service: 'rpc', peer: 'y:1' },
      'again',
    );
    repeated.flush();
    assert.equal(lines.length, 6);
  });
});
