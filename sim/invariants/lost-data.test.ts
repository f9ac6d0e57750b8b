import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PartitionLocation } from '../../core/domain/index.ts';
import type { FileRef, NodeId } from '../../core/machines/effects.ts';
import { workerNodeId } from '../../core/protocol/node-ids.ts';
import { World } from '../world/world.ts';
import { readableCopies } from './lost-data.ts';

// Hand-made machine states in a world whose nodes never step: a reducer's read plan of two epochs, each with a
// primary and a replica, and the workers that hold (or no longer hold) the copies.

const workerOf = (n: number) => ({ host: `h${n}`, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 });
const BYTES = 40;

function copy(epoch: number, n: number, mode: 'PRIMARY' | 'REPLICA') {
  const location: PartitionLocation = {
    partitionId: 5,
    epoch,
    worker: workerOf(n),
    mode,
    storage: { type: 'HDD', mountPoint: '/d', availableTypes: 2 },
  };
  const file = {
    uniqueId: `5-${epoch}`,
    mode,
    storage: location.storage,
    bytes: BYTES,
    chunkOffsets: [0, BYTES],
  };
  return { location, file };
}

/** Worker n holds the named copies committed (`bytes` long on its disk: short of BYTES when cut by a crash). */
function world(
  holdings: Readonly<Record<number, readonly { name: string; bytes?: number }[]>>,
  down: number[] = [],
) {
  const w = new World({ seed: 0 });
  const idle = { step: (state: unknown) => ({ state, effects: [] }) };
  const plan = {
    epochs: [
      { epoch: 0, copies: [copy(0, 1, 'PRIMARY'), copy(0, 2, 'REPLICA')] },
      { epoch: 1, copies: [copy(1, 3, 'PRIMARY'), copy(1, 4, 'REPLICA')] },
    ],
    mapAttempts: [],
    expected: [],
  };
  w.addNode({
    id: 'reduce-a-0-5',
    role: 'reduce',
    machine: idle,
    initialState: () => ({ config: { appId: 'a', shuffleId: 0 }, plan }),
  });
  w.start('reduce-a-0-5');
  for (const n of [1, 2, 3, 4]) {
    const id: NodeId = workerNodeId(workerOf(n));
    const files = new Map<string, unknown>();
    for (const { name } of holdings[n] ?? []) {
      const file: FileRef = { id: `a-0/${name}`, tier: 'HDD', mountPoint: '/d' };
      files.set(name, { name, file, status: 'committed', bytes: BYTES });
    }
    w.addNode({
      id,
      role: 'worker',
      machine: idle,
      disks: [{ mountPoint: '/d', type: 'HDD', capacityBytes: 1 << 20 }],
      initialState: () => ({ lifecycle: { state: 'Normal' }, shuffles: new Map([['a-0', { files }]]) }),
    });
    for (const { name, bytes } of holdings[n] ?? []) {
      const file: FileRef = { id: `a-0/${name}`, tier: 'HDD', mountPoint: '/d' };
      w.storageOf(id)!.execute({ kind: 'createFile', op: 1, file }, 0);
      w.storageOf(id)!.execute({ kind: 'write', op: 2, file, bytes: new Uint8Array(bytes ?? BYTES) }, 0);
    }
    if (!down.includes(n)) w.start(id);
  }
  return w;
}

describe('readableCopies (was the data really lost?)', () => {
  it('names an intact committed copy of every epoch when there is one', () => {
    const w = world({ 2: [{ name: '5-0-1' }], 3: [{ name: '5-1-0' }] });
    assert.equal(
      readableCopies(w, 'reduce-a-0-5', 0),
      'epoch 0 REPLICA on h2:1:2:3:4, epoch 1 PRIMARY on h3:1:2:3:4',
    );
  });

  it('calls the data lost when some epoch has no copy a running worker holds whole and committed', () => {
    assert.equal(
      readableCopies(world({ 2: [{ name: '5-0-1' }] }), 'reduce-a-0-5', 0),
      undefined,
      'no epoch 1',
    );
    assert.equal(
      readableCopies(world({ 2: [{ name: '5-0-1' }], 3: [{ name: '5-1-0' }] }, [3]), 'reduce-a-0-5', 0),
      undefined,
      'its worker is down',
    );
    assert.equal(
      readableCopies(
        world({ 2: [{ name: '5-0-1' }], 3: [{ name: '5-1-0', bytes: BYTES - 1 }] }),
        'reduce-a-0-5',
        0,
      ),
      undefined,
      'a crash cut the file short',
    );
    // The workers' processes started at 0: a reducer that started before them (at -1) may have lost its
    // requests with their earlier processes (a restart during the read), so nothing is proven.
    assert.equal(
      readableCopies(world({ 2: [{ name: '5-0-1' }], 3: [{ name: '5-1-0' }] }), 'reduce-a-0-5', -1),
      undefined,
      'its worker restarted during the read',
    );
  });
});
