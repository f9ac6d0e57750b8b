// Planned stops are not losses (issue 33), on real processes: of four workers, one is decommissioned and exits, one
// is stopped with SIGTERM, the master is restarted, a third is stopped with SIGTERM, and the fourth is SIGKILLed.
// The three that reported their exit are listed as shut down (state Exit), none as decommissioning, and neither
// master process logs them lost; the killed one is lost: LostWorkerCount 1, one `master.worker.lost` line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import type { LogLine, ServerProcess } from './cluster/server-process.ts';
import { getJson, postJson } from './http/testing/http-client.ts';
import { scrapeGauge } from './metrics/testing.ts';

const CLI = fileURLToPath(new URL('./cli/main.ts', import.meta.url));

// T = 2 s: workers heartbeat every 500 ms and the master checks every 2 s, so the killed worker is lost within 4 s.
const SERVERS = ['svc.master.heartbeat.worker.timeout=2s', 'svc.rpc.askTimeout=4s'];

interface WorkerBody {
  readonly host: string;
  readonly rpcPort: number;
  readonly pushPort: number;
  readonly fetchPort: number;
  readonly replicatePort: number;
  readonly workerState?: string;
}
interface MasterWorkers {
  readonly workers: readonly WorkerBody[];
  readonly lostWorkers: readonly { readonly worker: WorkerBody }[];
  readonly shutdownWorkers: readonly WorkerBody[];
  readonly decommissioningWorkers: readonly WorkerBody[];
}

const keyOf = (w: WorkerBody) => `${w.host}:${w.rpcPort}:${w.pushPort}:${w.fetchPort}:${w.replicatePort}`;

function idBody(key: string): WorkerBody {
  const [host, rpcPort, pushPort, fetchPort, replicatePort] = key.split(':');
  return {
    host: host!,
    rpcPort: Number(rpcPort),
    pushPort: Number(pushPort),
    fetchPort: Number(fetchPort),
    replicatePort: Number(replicatePort),
  };
}

async function masterWorkers(cluster: LocalCluster): Promise<MasterWorkers> {
  const response = await getJson(cluster.masterHttpUrl, '/api/v1/workers');
  assert.equal(response.status, 200, response.text);
  return response.json as MasterWorkers;
}

const stoppedLine = (worker: string, exit: string) => (line: LogLine) =>
  line.event === 'master.worker.stopped' && line.worker === worker && line.exit === exit;

function lostLines(masters: readonly ServerProcess[]): string[] {
  return masters.flatMap((m) =>
    m.seen((line) => line.event === 'master.worker.lost').map((line) => String(line.worker)),
  );
}

describe('planned stops are not losses (real processes)', () => {
  let cluster: LocalCluster | undefined;
  after(async () => {
    await cluster?.stop();
  });

  it('decommissioned, SIGTERMed and restarted-master stops are shut down, only the SIGKILLed worker is lost', async () => {
    const c = (cluster = await LocalCluster.start({
      workers: 4,
      conf: SERVERS,
      workerConf: ['svc.worker.decommission.checkInterval=200ms'],
    }));
    const [decommissioned, terminated, terminatedAfterRestart, killed] = c.workerIds as [
      string,
      string,
      string,
      string,
    ];
    const firstMaster = c.master;

    const event = await postJson(c.masterHttpUrl, '/api/v1/workers/events', {
      eventType: 'DECOMMISSION',
      workers: [idBody(decommissioned)],
    });
    assert.equal(event.status, 200, event.text);
    assert.equal(await c.workers[0]!.waitForExit(), 0);
    await firstMaster.waitFor(
      stoppedLine(decommissioned, 'DECOMMISSION'),
      'the decommissioned worker stopped',
    );

    c.workers[1]!.kill('SIGTERM');
    assert.equal(await c.workers[1]!.waitForExit(), 0);
    await firstMaster.waitFor(stoppedLine(terminated, 'IMMEDIATELY'), 'the SIGTERMed worker stopped');

    await c.restartMaster('SIGTERM');
    const restarted = c.master;
    await restarted.waitForEvent('master.restored');

    c.workers[2]!.kill('SIGTERM');
    assert.equal(await c.workers[2]!.waitForExit(), 0);
    await restarted.waitFor(
      stoppedLine(terminatedAfterRestart, 'IMMEDIATELY'),
      'the worker SIGTERMed after the restart stopped',
    );

    // Killed after the others stopped: the check that finds it silent would have found them too.
    c.workers[3]!.kill('SIGKILL');
    await restarted.waitFor(
      (line) => line.event === 'master.worker.lost' && line.worker === killed,
      'the SIGKILLed worker lost',
    );

    assert.deepEqual(lostLines([firstMaster, restarted]), [killed], 'only the killed worker is logged lost');
    const body = await masterWorkers(c);
    assert.deepEqual(body.workers, []);
    assert.deepEqual(
      body.lostWorkers.map((lost) => keyOf(lost.worker)),
      [killed],
    );
    assert.deepEqual(
      body.shutdownWorkers.map((w) => [keyOf(w), w.workerState]).sort(),
      [
        [decommissioned, 'Exit'],
        [terminated, 'Exit'],
        [terminatedAfterRestart, 'Exit'],
      ].sort(),
    );
    assert.deepEqual(
      body.decommissioningWorkers,
      [],
      'the decommissioned worker is gone, not decommissioning',
    );
    assert.equal(await scrapeGauge(c.masterHttpUrl, 'LostWorkerCount'), 1);
    assert.equal(await scrapeGauge(c.masterHttpUrl, 'ShutdownWorkerCount'), 3);
    assert.equal(await scrapeGauge(c.masterHttpUrl, 'DecommissionWorkerCount'), 0);
    assert.equal(await scrapeGauge(c.masterHttpUrl, 'WorkerCount'), 0);

    const table = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', CLI, 'admin', 'workers', '--master', c.masterHttpUrl],
        { timeout: 60_000 },
        (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(stderr))),
      ),
    );
    assert.match(table, /^lost \(1\)$/m);
    assert.match(table, /^shutdown \(3\)$/m);
    assert.match(table, /^decommissioning \(0\): none$/m);
  });
});
