// A cluster on a real (virtual) network (issue 34): the master and each worker in a network namespace of its own,
// the job in the root namespace. What loopback cannot show: the servers reach each other by address over a bridge,
// and a worker whose link is cut answers nothing while its process lives on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HostNetwork, hostsUnavailableReason } from './cluster/hosts.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { getJson } from './http/testing/http-client.ts';
import { runVerifiedJob, type SmallJob } from './testing/small-job.ts';

const unavailable = await hostsUnavailableReason();
if (unavailable !== undefined) console.log(`# skipping the namespace-host cluster tests: ${unavailable}`);

const JOB: SmallJob = { maps: 3, partitions: 6, recordsPerPartition: 50, recordBytes: 100 };

describe('a cluster on namespace hosts (real processes)', { skip: unavailable }, () => {
  let network: HostNetwork | undefined;
  let cluster: LocalCluster | undefined;

  before(async () => {
    network = await HostNetwork.create({ hosts: 4 });
    cluster = await LocalCluster.start({ workers: 3, hosts: network });
  });

  after(async () => {
    await cluster?.stop();
    await network?.destroy();
  });

  it('registers each worker under its host’s address and runs a replicated job that verifies', async () => {
    const addresses = network!.hosts.slice(1).map((host) => host.address);
    assert.deepEqual(
      cluster!.workerIds.map((id) => id.split(':')[0]),
      addresses,
      'each worker is known by its own host’s address',
    );
    const response = await getJson(cluster!.masterHttpUrl, '/api/v1/workers');
    assert.equal(response.status, 200, response.text);
    const hosts = (response.json as { workers: { host: string }[] }).workers
      .map((worker) => worker.host)
      .sort();
    assert.deepEqual(hosts, [...addresses].sort(), 'the master lists the workers by their hosts’ addresses');
    await runVerifiedJob(cluster!.masterUrl, JOB, { conf: { 'svc.client.push.replicate.enabled': 'true' } });
  });
});
