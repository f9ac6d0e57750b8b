import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  applicationOfNode,
  driverNodeId,
  lifecycleManagerNodeId,
  mapTaskNodeId,
  masterNodeId,
  reduceTaskNodeId,
  workerNodeId,
} from './node-ids.ts';

// Application ids with dashes and digits, as engines make them (`app-20261125-0001`).
const appId = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,16}$/);
const id = fc.nat({ max: 100_000 });

describe('applicationOfNode', () => {
  it('gives back the application of every client node id, whatever dashes and digits it holds', () => {
    fc.assert(
      fc.property(appId, id, id, id, (app, a, b, c) => {
        assert.equal(applicationOfNode(lifecycleManagerNodeId(app)), app);
        assert.equal(applicationOfNode(driverNodeId(app)), app);
        assert.equal(applicationOfNode(mapTaskNodeId(app, a, b, c)), app);
        assert.equal(applicationOfNode(reduceTaskNodeId(app, a, b)), app);
      }),
    );
  });

  it('names no application for servers and other names', () => {
    fc.assert(
      fc.property(fc.nat({ max: 9 }), fc.ipV4(), (index, host) => {
        assert.equal(applicationOfNode(masterNodeId(index)), undefined);
        const worker = { host, rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
        assert.equal(applicationOfNode(workerNodeId(worker)), undefined);
      }),
    );
    for (const name of ['executor-12-abc', 'lm-', 'map-app-1-2', 'map-app-x-1-2', 'reduce-1-2', 'probe']) {
      assert.equal(applicationOfNode(name), undefined, name);
    }
  });
});
