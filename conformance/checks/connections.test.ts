// The 8/numConnectionsPerPeer row observes the master's connections: it passes on a deployment whose workers keep the
// release's number of connections, and fails when the deployment is checked as a release whose number differs.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { LocalCluster } from '../../runtime/cluster/local-cluster.ts';
import type { RuleSpec } from '../rows.ts';
import { observedConnectionsRow } from './connections.ts';

const SPEC: RuleSpec = { ruleId: '8/numConnectionsPerPeer', section: '8', title: 'connections per peer' };

describe('8/numConnectionsPerPeer, from the connections the master sees', () => {
  const clusters: LocalCluster[] = [];
  after(async () => {
    await Promise.all(clusters.map((cluster) => cluster.stop()));
  });

  for (const { release, perPeer } of [
    { release: '0.6.0', perPeer: 1 },
    { release: '0.3.2', perPeer: 2 },
  ]) {
    it(`passes on ${release} servers, whose workers keep ${perPeer} connection(s) to the master`, async () => {
      const cluster = await LocalCluster.start({ workers: 2, release });
      clusters.push(cluster);
      const target = { release, masterUrl: cluster.masterHttpUrl, workerUrls: [] };
      const row = await observedConnectionsRow(target, SPEC, perPeer);
      if (typeof row === 'string') assert.fail(`the connections were not observed: ${row}`);
      assert.equal(row.verdict, 'pass', row.evidence);
      assert.match(
        row.evidence,
        new RegExp(`\\{service="rpc"\\} ${2 * perPeer} with metrics_WorkerCount_Value 2`),
        'the evidence names the connections and the workers',
      );
      const wrong = await observedConnectionsRow(target, SPEC, 3 - perPeer);
      if (typeof wrong === 'string') assert.fail(`the connections were not observed: ${wrong}`);
      assert.equal(wrong.verdict, 'fail', 'the other release’s number is refused');
    });
  }
});
