// The client admission matrix (contract section 1, rules 3 to 7) against real local clusters, and against a server
// that deliberately mis-admits a 0.2 client at 0.6.0: the check must say so in a precise failing row.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from '../../runtime/cluster/local-cluster.ts';
import { startMisadmittingFront, type MisadmittingFront } from '../../runtime/testing/misadmitting-front.ts';
import type { RuleRow, Target } from '../report/row.ts';
import {
  admissionCheck,
  expectedAdmission,
  expectedReviveStorage,
  masterUrlFor,
  parsePartitions,
  reviveRow,
  type ListedLocation,
} from './admission.ts';

function targetOf(cluster: LocalCluster, release: string, dataUrl = cluster.masterUrl): Target {
  return {
    release,
    masterUrl: cluster.masterHttpUrl,
    workerUrls: cluster.workerIds.map((_, i) => cluster.workerHttpUrl(i)),
    dataUrl,
  };
}

function rowOf(rows: readonly RuleRow[], ruleId: string): RuleRow {
  const found = rows.find((r) => r.ruleId === ruleId);
  assert.ok(found, `a row ${ruleId} among ${rows.map((r) => r.ruleId).join(', ')}`);
  return found;
}

describe('the admission expectations, as the contract writes them', () => {
  it('refuses clients older than 0.3.0 from 0.4.0 on (rule 6), and accepts a 0.2 client at 0.3 (rule 7)', () => {
    for (const server of ['0.4.0', '0.4.1', '0.5.0', '0.5.1', '0.6.0']) {
      for (const client of ['0.2.0', '0.2.1'])
        assert.equal(expectedAdmission(server, client).expect, 'refuse');
      for (const client of ['0.3.0', '0.3.2', '0.4.0'])
        assert.equal(expectedAdmission(server, client).expect, 'accept', `${client} at ${server}`);
    }
    for (const server of ['0.3.0', '0.3.1', '0.3.2'])
      assert.equal(expectedAdmission(server, '0.2.0').expect, 'accept', `0.2.0 at ${server}`);
    assert.equal(expectedAdmission('0.2.0', '0.2.0').expect, 'accept');
    assert.equal(expectedAdmission('0.5.1', '0.6.0').expect, 'either', 'a client newer than its servers');
    assert.match(expectedAdmission('0.6.0', '0.2.0').because, /rule 6/);
  });

  it('expects revived locations in memory before 0.6.0 (rule 4) and on the first available type from 0.6.0 (rule 3)', () => {
    assert.deepEqual(expectedReviveStorage('0.5.1', ['HDD']), { storage: 'MEMORY', rule: 4 });
    assert.deepEqual(expectedReviveStorage('0.6.0', ['SSD', 'HDD']), { storage: 'SSD', rule: 3 });
  });

  it('hands a client before 0.3.0 the rss:// scheme (contract 9.3)', () => {
    assert.equal(masterUrlFor('0.2.1', 'svc://h:1'), 'rss://h:1');
    assert.equal(masterUrlFor('0.3.0', 'rss://h:1'), 'svc://h:1');
  });

  it('reads both the /api/v1 partition listing and the legacy text', () => {
    const json = JSON.stringify({
      primaryPartitions: { 'app-1-0': { '0-1': { storage: 'MEMORY' } } },
      replicaPartitions: { 'app-1-0': { '2-0': { storage: 'HDD' } } },
    });
    assert.deepEqual(
      parsePartitions('w', json, true).map((l) => [l.side, l.partitionId, l.epoch, l.storage]),
      [
        ['primary', 0, 1, 'MEMORY'],
        ['replica', 2, 0, 'HDD'],
      ],
    );
    const text = 'Partition Location Info\nprimary app-1-0 0-1 MEMORY 127.0.0.1:1:2:3:4\n';
    assert.deepEqual(parsePartitions('w', text, false)[0]?.storage, 'MEMORY');
  });

  it('fails a revived location on the wrong storage, and says when no revive was seen', () => {
    const target: Target = { release: '0.6.0', masterUrl: 'http://m', workerUrls: ['http://w'] };
    const at = (epoch: number, storage: string): ListedLocation => ({
      worker: 'http://w',
      shuffleKey: 'app-0',
      partitionId: 0,
      epoch,
      storage,
      side: 'primary',
    });
    const read = ['GET http://w/api/v1/shuffles/partitions'];
    const wrong = reviveRow(target, {
      verified: true,
      revived: { client: '0.6.0', locations: [at(0, 'HDD'), at(1, 'MEMORY')], read },
    });
    assert.equal(wrong.verdict, 'fail');
    assert.match(
      wrong.evidence,
      /expected storage HDD \(rule 3\), listed: primary app-0 0-1 MEMORY on http:\/\/w/,
    );
    const old = reviveRow(target, {
      verified: true,
      revived: { client: '0.5.1', locations: [at(1, 'HDD')], read },
    });
    assert.equal(old.verdict, 'fail', 'a 0.5.1 client’s revive defaults to memory (rule 4)');
    const unverified = reviveRow(target, {
      verified: false,
      revived: { client: '0.6.0', locations: [at(1, 'HDD')], read },
    });
    assert.equal(unverified.verdict, 'fail');
    const none = reviveRow(target, {
      verified: true,
      revived: { client: '0.6.0', locations: [at(0, 'HDD')], read },
    });
    assert.equal(none.verdict, 'not-applicable');
    assert.match(none.evidence, /did not split/);
  });

  it('says not applicable, with the reason, when no data endpoint is given', async () => {
    const rows = await admissionCheck({ clients: ['0.6.0'] })({
      release: '0.6.0',
      masterUrl: 'http://127.0.0.1:1',
      workerUrls: [],
    });
    assert.ok(rows.length > 0, 'rows.length > 0');
    for (const r of rows) {
      assert.equal(r.verdict, 'not-applicable');
      assert.match(r.evidence, /--data/);
    }
  });
});

describe('admission against a real cluster presenting 0.6.0', () => {
  let cluster: LocalCluster;
  let rows: readonly RuleRow[];
  before(async () => {
    cluster = await LocalCluster.start({ workers: 2 });
    rows = await admissionCheck({ clients: ['0.2.0', '0.5.1', '0.6.0'] })(targetOf(cluster, '0.6.0'));
  });
  after(async () => {
    await cluster?.stop();
  });

  it('refuses the 0.2.0 client at the handshake with both releases named and nothing written', () => {
    const refused = rowOf(rows, '1/admission-client-0.2.0');
    assert.equal(refused.verdict, 'pass', refused.evidence);
    assert.match(refused.evidence, /ClientReleaseRefusedError/);
    assert.match(refused.evidence, /absent from GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/applications/);
  });

  it('accepts the 0.5.1 and 0.6.0 clients, whose replicated shuffles verify', () => {
    for (const client of ['0.5.1', '0.6.0']) {
      const accepted = rowOf(rows, `1/admission-client-${client}`);
      assert.equal(accepted.verdict, 'pass', accepted.evidence);
      assert.match(accepted.evidence, /replication on/);
    }
  });

  it('sees the revive happen, in memory for 0.5.1 (rule 4) and on HDD for 0.6.0 (rule 3)', () => {
    const old = rowOf(rows, '1/revive-storage-client-0.5.1');
    assert.equal(old.verdict, 'pass', old.evidence);
    assert.match(old.evidence, / 0-[1-9]\d* MEMORY on /, 'a location of epoch > 0 listed in memory');
    const current = rowOf(rows, '1/revive-storage-client-0.6.0');
    assert.equal(current.verdict, 'pass', current.evidence);
    assert.match(current.evidence, / 0-[1-9]\d* HDD on /);
  });

  it('says why rule 5 cannot be checked from outside, and never passes it', () => {
    const index0 = rowOf(rows, '1/revive-index-0');
    assert.equal(index0.verdict, 'not-applicable');
    assert.match(index0.evidence, /internals/);
  });
});

describe('admission against a real cluster presenting 0.3.0', () => {
  let cluster: LocalCluster;
  after(async () => {
    await cluster?.stop();
  });

  it('accepts a 0.2.0 client (rule 7) through the legacy listings, and refuses a newer 0.6.0 client cleanly', async () => {
    cluster = await LocalCluster.start({ workers: 2, release: '0.3.0' });
    const rows = await admissionCheck({ clients: ['0.2.0', '0.6.0'] })(targetOf(cluster, '0.3.0'));
    const old = rowOf(rows, '1/admission-client-0.2.0');
    assert.equal(old.verdict, 'pass', old.evidence);
    assert.match(old.evidence, /rss:\/\//);
    const revived = rowOf(rows, '1/revive-storage-client-0.2.0');
    assert.equal(revived.verdict, 'pass', revived.evidence);
    assert.match(revived.evidence, /MEMORY/);
    const newer = rowOf(rows, '1/admission-client-0.6.0');
    assert.equal(newer.verdict, 'pass', newer.evidence);
    assert.match(newer.evidence, /refused at the handshake: ClientReleaseRefusedError/);
    assert.match(newer.evidence, /absent from GET http:\/\/127\.0\.0\.1:\d+\/applications/);
  });
});

describe('admission against a real cluster presenting 0.2.0 (its workers given rss://, contract 9.3)', () => {
  let cluster: LocalCluster;
  after(async () => {
    await cluster?.stop();
  });

  it('accepts a 0.2.0 client and verifies its shuffle', async () => {
    cluster = await LocalCluster.start({ workers: 2, release: '0.2.0' });
    assert.match(cluster.masterUrlFor(), /^rss:\/\//);
    const rows = await admissionCheck({ clients: ['0.2.0'], revive: false })(targetOf(cluster, '0.2.0'));
    assert.deepEqual(
      rows.map((r) => [r.ruleId, r.verdict]),
      [['1/admission-client-0.2.0', 'pass']],
      JSON.stringify(rows),
    );
  });
});

describe('admission against a server that mis-admits a 0.2 client at 0.6.0', () => {
  let cluster: LocalCluster;
  let front: MisadmittingFront | undefined;
  after(async () => {
    await front?.close();
    await cluster?.stop();
  });

  it('fails the 0.2.0 row, naming the registered application', async () => {
    cluster = await LocalCluster.start({ workers: 2 });
    front = await startMisadmittingFront({ host: '127.0.0.1', port: cluster.masterPort }, '0.6.0');
    const rows = await admissionCheck({ clients: ['0.2.0'] })(targetOf(cluster, '0.6.0', front.url));
    assert.deepEqual(
      front.laundered.slice(0, 1),
      ['0.2.0'],
      'the front rewrote the 0.2.0 client’s handshake',
    );
    const broken = rowOf(rows, '1/admission-client-0.2.0');
    assert.equal(broken.verdict, 'fail');
    assert.match(
      broken.evidence,
      /resolved: the master accepted the client and registered application conformance-0_2_0-/,
    );
    assert.match(
      broken.evidence,
      /GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/applications names conformance-0_2_0-/,
    );
    assert.match(broken.evidence, /expected a refusal \(rule 6/);
  });
});
