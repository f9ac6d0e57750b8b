// A server's lifetime: a part kept once the shutdown began is closed at once, so that a start still under way when
// a group's master is deposed leaves nothing serving behind the shutdown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../log.ts';
import { ServerLifetime } from './server-parts.ts';

describe('ServerLifetime', () => {
  it('closes the parts kept before the shutdown, latest first, and a part kept after it at once', async () => {
    const lifetime = new ServerLifetime({ role: 'master', logger: createLogger('silent', {}) });
    const closed: string[] = [];
    lifetime.keep({ close: () => closed.push('first') });
    lifetime.keep({ close: () => closed.push('second') });
    assert.equal(lifetime.stopping, false);
    const shutdown = lifetime.shutdown(75, 'deposed');
    assert.equal(lifetime.stopping, true);
    let late!: () => void;
    const lateClosed = new Promise<void>((resolve) => (late = resolve));
    lifetime.keep({
      close: () => {
        closed.push('late');
        late();
      },
    });
    await shutdown;
    await lateClosed;
    assert.equal(await lifetime.stopped, 75);
    assert.deepEqual(closed.slice(0, 2), ['second', 'first']);
    assert.ok(closed.includes('late'), 'the part kept after the shutdown began is closed');
  });
});
