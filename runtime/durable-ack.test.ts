// Durable before acknowledged, on real processes: a master killed (SIGKILL) the moment it acknowledged a
// registration, and started again on its state directory, still knows the application. Its store is made slow
// (every write starts 1.5 s late), so that an acknowledgement sent before the write was confirmed would die with
// the process: the planted bug 'effects-before-persist' in the interpreter both drivers share
// (core/interpreter/interpreter.ts) loses the registration here, and the same test without it keeps it.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { PlantedBug } from '../core/planted-bugs.ts';
import { startApplication, type Application } from './client/application.ts';
import { LocalCluster } from './cluster/local-cluster.ts';

const SLOW_STORE_MS = 1500;

describe('a master killed right after it acknowledged a registration', () => {
  let cluster: LocalCluster | undefined;
  let app: Promise<Application> | undefined;
  afterEach(async () => {
    await (await app?.catch(() => undefined))?.close();
    app = undefined;
    await cluster?.stop();
    cluster = undefined;
  });

  /** Registers an application, kills the master at its acknowledgement, restarts it: the ids it lists then. */
  async function killAtAcknowledgement(
    plantedBug?: PlantedBug,
  ): Promise<{ appId: string; listed: string[] }> {
    cluster = await LocalCluster.start({
      workers: 1,
      durableWriteDelayMs: SLOW_STORE_MS,
      ...(plantedBug === undefined ? {} : { plantedBug }),
    });
    const master = cluster.master;
    app = startApplication({ master: cluster.masterUrl });
    // The line is written with the answer, after the store confirmed the write (docs/core.md): kill at once.
    const registered = await master.waitForEvent('master.application.registered');
    master.kill('SIGKILL');
    assert.equal(await master.waitForExit(), -1, 'the master died of the signal, not on its own');
    // The restarted master restores its state in its first step, before its management interface listens.
    await cluster.restartMaster();
    const response = await fetch(`${cluster.masterHttpUrl}/api/v1/applications`);
    const body = (await response.json()) as { applications: { appId: string }[] };
    return {
      appId: String(registered.appId),
      listed: body.applications.map((entry) => entry.appId),
    };
  }

  it('keeps the registration across the restart', async () => {
    const { appId, listed } = await killAtAcknowledgement();
    const restored = await cluster!.master.waitForEvent('master.restored');
    assert.ok(Number(restored.applications) >= 1, 'the store handed the registration back at start');
    assert.ok(listed.includes(appId), `${appId} is listed by the restarted master`);
    assert.equal((await app!).appId, appId, 'the acknowledged application is the one that survived');
  });

  it("loses it with the planted bug 'effects-before-persist' (the test bites)", async () => {
    await killAtAcknowledgement('effects-before-persist');
    // What the store handed back at the restart, not the listing: the application, still running, registers again
    // at its next heartbeat to a master that does not know it, and a loaded machine's restart can outlast that.
    // The restored line comes before 'listening', which the restart waited for; a store that held nothing at all
    // (killed before its first write) restores nothing and says nothing.
    const restored = cluster!.master.seen((line) => line.event === 'master.restored')[0];
    assert.equal(
      restored === undefined ? 0 : Number(restored.applications),
      0,
      'the application was acknowledged before the store held it, and forgotten with the process',
    );
  });
});
