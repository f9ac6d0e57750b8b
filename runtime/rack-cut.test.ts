// A whole rack cut off mid-job (issue 34): four workers on namespace hosts, two racks of two
// (svc.worker.networkLocation), the application placing each replica on another rack than its primary
// (svc.client.reserveSlots.rackaware.enabled). Once map data is on both racks, a partition separates one rack from
// the master, the other rack and the job: every partition still has a copy on the other side, so no replicated data
// is lost and the job verifies, within 40 s with push.timeout 10 s.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workerKey } from '../core/domain/index.ts';
import { hostsUnavailableReason, type Host } from './cluster/hosts.ts';
import { getJson } from './http/testing/http-client.ts';
import { hostCluster, reservedCopies, verifyThroughFault } from './testing/cut-job.ts';

const unavailable = await hostsUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the rack-cut test: ${unavailable}`);

const RACKS = ['/rack-a', '/rack-a', '/rack-b', '/rack-b'] as const;
const CUT_RACK = '/rack-a';

describe(
  'a whole rack cut off by the network mid-map (namespace hosts, real processes)',
  { skip: unavailable },
  () => {
    const shared = hostCluster({ workers: RACKS.length, racks: RACKS });

    it('registers each worker with its rack', async () => {
      const { cluster } = shared;
      const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
      assert.equal(response.status, 200, response.text);
      const racks = new Map(
        (response.json as { workers: { host: string; networkLocation: string }[] }).workers.map((worker) => [
          worker.host,
          worker.networkLocation,
        ]),
      );
      assert.deepEqual(
        RACKS.map((_, index) => racks.get(cluster.workerHost(index)!.address)),
        [...RACKS],
        'the master knows each worker’s rack (svc.worker.networkLocation)',
      );
    });

    it('loses no replicated data when a rack is cut off, and the job verifies within 40 s', async (t) => {
      const { cluster, network, clients } = shared;
      const rackOf = new Map(cluster.workerIds.map((id, index) => [id, RACKS[index]!]));
      const inRack = (rack: string): Host[] =>
        RACKS.flatMap((r, index) => (r === rack ? [cluster.workerHost(index)!] : []));
      const job = await verifyThroughFault(cluster, {
        conf: {
          'svc.client.reserveSlots.rackaware.enabled': 'true',
          'svc.client.push.timeout': '10s',
        },
        shuffleId: 0,
        target: () => RACKS.indexOf(CUT_RACK),
        fault: async (_worker, client) => {
          // Rack-aware placement: each partition's two copies are on two racks, so the other rack holds one of each.
          const copies = reservedCopies(client, 0);
          for (const copy of copies.filter((c) => c.mode === 'PRIMARY')) {
            assert.ok(copy.peer !== undefined, `partition ${copy.partitionId} has a replica`);
            assert.notEqual(
              rackOf.get(workerKey(copy.peer.worker)),
              rackOf.get(workerKey(copy.worker)),
              `partition ${copy.partitionId}'s copies are on two racks`,
            );
          }
          const cutCopies = copies.filter((c) => rackOf.get(workerKey(c.worker)) === CUT_RACK).length;
          assert.ok(cutCopies > 0, `the rack cut off holds copies of the shuffle (${cutCopies})`);
          const rest = ['root' as const, network.hosts[0]!, ...inRack('/rack-b')];
          await network.partition(inRack(CUT_RACK), rest);
        },
        budgetMs: 40_000,
        clients,
      });
      t.diagnostic(
        `verified ${job.cost} ms after rack ${CUT_RACK} was cut off (copies ${JSON.stringify(job.held)})`,
      );
    });
  },
);
