import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { ephemeralLow, stablePorts } from './stable-ports.ts';

describe('ports a test server can come back on', () => {
  it("reads the ephemeral range's first port, and falls back to Linux's default", () => {
    assert.equal(
      ephemeralLow(() => '40000\t60999\n'),
      40000,
    );
    assert.equal(
      ephemeralLow(() => 'garbage'),
      32768,
    );
    assert.equal(
      ephemeralLow(() => {
        throw new Error('no /proc');
      }),
      32768,
    );
  });

  it('draws distinct ports below the ephemeral range that a server can then bind', async () => {
    const ports = await stablePorts(4, '127.0.0.1');
    assert.equal(new Set(ports).size, 4, `distinct: ${ports.join(',')}`);
    for (const port of ports) {
      assert.ok(port >= 10000 && port < ephemeralLow(), `${port} is below the ephemeral range`);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: '127.0.0.1' }, resolve);
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('passes over a port that is taken', async () => {
    const holder = createServer();
    const [taken] = await stablePorts(1, '127.0.0.1');
    await new Promise<void>((resolve) => holder.listen({ port: taken!, host: '127.0.0.1' }, resolve));
    try {
      // The first draw lands on the taken port, the next ones elsewhere.
      const draws = [taken!, taken!, 12345, 23456];
      const low = ephemeralLow();
      let k = 0;
      const random = () => (draws[Math.min(k++, draws.length - 1)]! - 10000 + 0.5) / (low - 10000);
      const [port] = await stablePorts(1, '127.0.0.1', random);
      assert.notEqual(port, taken, 'the taken port is not drawn');
      assert.ok(k >= 3, `it drew again after the taken port (${k} draws)`);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
