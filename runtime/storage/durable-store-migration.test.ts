// A master's state directory written by an earlier build (one JSON value under master/state) on the real stores: the
// master's first start rewrites it in the per-key layout in one batch, and the directory reopened holds the layout
// alone, which the next start reads back without writing anything.
import assert from 'node:assert/strict';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { workerKey } from '../../core/domain/index.ts';
import type { Effect } from '../../core/machines/effects.ts';
import { assembleDurable, MASTER_STATE_PREFIX } from '../../core/machines/master/layout.ts';
import { masterMachine } from '../../core/machines/master/machine.ts';
import {
  encodeDurableState,
  initialMasterState,
  MASTER_STATE_KEY,
  type MasterState,
} from '../../core/machines/master/state.ts';
import { testMasterConfig } from '../../core/machines/master/testing.ts';
import { Harness, workerId } from '../../core/machines/worker/test-kit.ts';
import { openDurableStore, type DbBackend } from './durable-store.ts';
import { makeTempRoot, removeTempRoot } from './testing.ts';

/** A master's durable state with two workers (one excluded by an operator) and an application with two shuffles. */
function earlierState(): MasterState['durable'] {
  const harness = new Harness(masterMachine, initialMasterState(testMasterConfig()));
  harness.start();
  for (const [i, id] of [workerId('h1', 9000), workerId('h2', 9010)].entries()) {
    harness.receive(
      workerKey(id),
      {
        type: 'RegisterWorker',
        worker: id,
        disks: [
          {
            mountPoint: '/d1',
            type: 'HDD',
            usableBytes: 2 ** 40,
            totalBytes: 2 ** 40,
            status: 'HEALTHY',
            avgFlushTimeNs: 0,
            avgFetchTimeNs: 0,
            activeSlots: 0,
          },
        ],
        networkLocation: '/r1',
      },
      { requestId: i + 1 },
    );
  }
  harness.step({
    kind: 'admin',
    command: { type: 'excludeWorkers', add: [workerKey(workerId('h2', 9010))], remove: [] },
  });
  for (const shuffleId of [1, 2]) {
    harness.receive(
      'lm',
      {
        type: 'RequestSlots',
        appId: 'app-1',
        shuffleId,
        partitionIds: [0, 1],
        replicate: false,
        rackAware: false,
        availableTypes: 2,
        excludedWorkers: [],
        maxWorkers: 10,
      },
      { requestId: 10 + shuffleId },
    );
  }
  return harness.state.durable;
}

function writesOf(effects: readonly Effect[]): { key: string; value: string | null }[] {
  return effects.flatMap((effect) =>
    effect.kind === 'persist' ? [{ key: effect.key, value: effect.value }] : [],
  );
}

for (const backend of ['ROCKSDB', 'LEVELDB'] as const satisfies readonly DbBackend[]) {
  describe(`a master's state of an earlier build on ${backend}`, () => {
    let root: string | undefined;

    beforeEach(async () => {
      root = await makeTempRoot(`migrate-${backend.toLowerCase()}`);
    });

    afterEach(async () => {
      await removeTempRoot(root);
      root = undefined;
    });

    it('is rewritten as the layout at the first start, in one batch, and read back from it after', async () => {
      const dir = path.join(root!, 'master-state');
      const durable = earlierState();
      const old = await openDurableStore(backend, dir);
      await old.write([{ key: MASTER_STATE_KEY, value: encodeDurableState(durable) }]);
      await old.close();

      const store = await openDurableStore(backend, dir);
      const first = new Harness(masterMachine, initialMasterState(testMasterConfig()));
      const effects = first.start(await store.load());
      assert.ok(
        effects.some((e) => e.kind === 'log' && e.event === 'master.state.migrated'),
        'the start says it migrated',
      );
      // The node driver writes a step's persists as one batch (runtime/driver/node-driver.ts).
      await store.write(writesOf(effects));
      await store.close();

      const reopened = await openDurableStore(backend, dir);
      try {
        const loaded = await reopened.load();
        assert.equal(loaded.has(MASTER_STATE_KEY), false, 'the one value is gone');
        assert.ok(
          [...loaded.keys()].every((key) => key.startsWith(MASTER_STATE_PREFIX)),
          'only layout keys are left',
        );
        const restored = assembleDurable(
          MASTER_STATE_PREFIX,
          [...loaded].map(([key, value]) => ({ key, value })),
          initialMasterState(testMasterConfig()).durable,
        );
        assert.deepEqual(
          [...restored.workers.workers.keys()].sort(),
          [...durable.workers.workers.keys()].sort(),
          'the same workers',
        );
        assert.deepEqual(
          [...restored.workers.manuallyExcluded.keys()],
          [...durable.workers.manuallyExcluded.keys()],
          'the same exclusion',
        );
        assert.deepEqual(restored.applications.apps.get('app-1')?.shuffles, [1, 2], 'the same shuffles');

        const second = new Harness(masterMachine, initialMasterState(testMasterConfig()));
        const restart = second.start(loaded);
        assert.deepEqual(writesOf(restart), [], 'a store in the layout is read, not rewritten');
        assert.equal(second.state.durable.applications.apps.get('app-1')?.shuffles.length, 2, 'restored');
      } finally {
        await reopened.close();
      }
    });
  });
}
