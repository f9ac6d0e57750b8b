// Durable before acknowledged, on real processes: a master killed (SIGKILL) the moment it acknowledged a
// registration, and started again on its state directory, still knows the application.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { startApplication, type Application } from './client/application.ts';
import { LocalCluster } from './cluster/local-cluster.ts';

describe('a master killed right after it acknowledged a registration', () => {
  let cluster: LocalCluster | undefined;
  let app: Promise<Application> | undefined;
  afterEach(async () => {
    await (await app?.catch(() => undefined))?.close();
    app = undefined;
    await cluster?.stop();
    cluster = undefined;
  });

  it('keeps the registration across the restart', async () => {
    cluster = await LocalCluster.start({ workers: 1 });
    const master = cluster.master;
    app = startApplication({ master: cluster.masterUrl });
    // The line is written with the answer, after the store confirmed the write (docs/core.md): kill at once.
    const registered = await master.waitForEvent('master.application.registered');
    master.kill('SIGKILL');
    assert.equal(await master.waitForExit(), -1, 'the master died of the signal, not on its own');
    const appId = String(registered.appId);

    await cluster.restartMaster();
    const restored = await cluster.master.waitForEvent('master.restored');
    assert.ok(Number(restored.applications) >= 1, 'the store handed the registration back at start');
    const response = await fetch(`${cluster.masterHttpUrl}/api/v1/applications`);
    const body = (await response.json()) as { applications: { appId: string }[] };
    assert.ok(
      body.applications.some((entry) => entry.appId === appId),
      `${appId} is listed by the restarted master`,
    );
    assert.equal((await app).appId, appId, 'the acknowledged application is the one that survived');
  });
});
