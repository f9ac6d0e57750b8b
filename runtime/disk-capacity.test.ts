// Disk capacity as it is (issue 33), on real processes: a worker's usable space is its filesystem's available space
// (statfs of the same directory) less the reserve, svc.worker.storage.disk.reserve.size or .ratio of the size,
// whichever is larger, refreshed every heartbeat; and two workers on one filesystem count it once in the master's
// device metrics.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalCluster } from './cluster/local-cluster.ts';
import { parseExposition, samplesOf, scrapeGauge } from './metrics/testing.ts';
import { pollFor } from './testing/poll.ts';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const RESERVE_BYTES = GiB;
const RESERVE_RATIO = 0.02;
// Other processes write to the same filesystem meanwhile: figures read moments apart agree within this.
const DRIFT = 64 * MiB;

function filesystemOf(dir: string): { available: number; total: number } {
  const fs = statfsSync(dir);
  return { available: fs.bavail * fs.bsize, total: fs.blocks * fs.bsize };
}

function reserveOf(total: number): number {
  return Math.max(RESERVE_BYTES, Math.floor(total * RESERVE_RATIO));
}

/** The worker's DeviceSvcFreeBytes for its disk. */
async function workerFreeBytes(base: string, mountPoint: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics/prometheus`)).text();
  const series = samplesOf(parseExposition(text)).filter(
    (sample) => sample.name === 'metrics_DeviceSvcFreeBytes_Value' && sample.labels.mountpoint === mountPoint,
  );
  assert.equal(series.length, 1, `one DeviceSvcFreeBytes series for ${mountPoint}`);
  return series[0]!.value;
}

describe('disk capacity (real processes)', () => {
  let cluster: LocalCluster;
  let disk: string;
  before(async () => {
    cluster = await LocalCluster.start({
      workers: 2,
      conf: ['svc.master.heartbeat.worker.timeout=8s'],
      workerConf: [
        `svc.worker.storage.disk.reserve.size=${RESERVE_BYTES}`,
        `svc.worker.storage.disk.reserve.ratio=${RESERVE_RATIO}`,
      ],
    });
    disk = path.join(cluster.dir, 'worker-0', 'disk-1');
  });
  after(async () => {
    await cluster?.stop();
  });

  it('is the filesystem’s available space less the reserve, and follows the filesystem', async () => {
    const settled = () =>
      pollFor(
        async () => {
          const free = await workerFreeBytes(cluster.workerHttpUrl(0), disk);
          const fs = filesystemOf(disk);
          const expected = fs.available - reserveOf(fs.total);
          return Math.abs(free - expected) <= DRIFT ? free : undefined;
        },
        () => `DeviceSvcFreeBytes of ${disk} equal to statfs available less the reserve`,
        { timeoutMs: 30_000, intervalMs: 200 },
      );
    const before = await settled();
    assert.ok(before < filesystemOf(disk).available, 'less than the filesystem has: the reserve is kept');

    // Another writer takes 256 MiB of the filesystem: the next observation shows it.
    const ballast = path.join(cluster.dir, 'ballast');
    mkdirSync(ballast, { recursive: true });
    writeFileSync(path.join(ballast, 'file'), Buffer.alloc(256 * MiB, 1));
    try {
      await pollFor(
        async () => {
          const free = await workerFreeBytes(cluster.workerHttpUrl(0), disk);
          return free <= before - 192 * MiB ? free : undefined;
        },
        () => `DeviceSvcFreeBytes of ${disk} to fall by the 256 MiB written beside it (from ${before})`,
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      // Once the kernel has allocated the file's blocks, the figure is statfs less the reserve again.
      await settled();
    } finally {
      rmSync(ballast, { recursive: true, force: true });
    }
  });

  it('counts the filesystem both workers share once in the master’s totals', async () => {
    const fs = filesystemOf(disk);
    assert.equal(
      fs.total,
      filesystemOf(path.join(cluster.dir, 'worker-1', 'disk-1')).total,
      'both workers’ disks are on one filesystem',
    );
    await pollFor(
      async () =>
        (await scrapeGauge(cluster.masterHttpUrl, 'DeviceSvcTotalBytes')) === fs.total ? true : undefined,
      () => `the master's DeviceSvcTotalBytes to be the filesystem's size ${fs.total} once, not twice`,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const free = await pollFor(
      async () => {
        const value = await scrapeGauge(cluster.masterHttpUrl, 'DeviceSvcFreeBytes');
        const now = filesystemOf(disk);
        return Math.abs(value - (now.available - reserveOf(now.total))) <= DRIFT ? value : undefined;
      },
      () => 'the master’s DeviceSvcFreeBytes to be the shared filesystem’s usable space once',
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.ok(free < fs.total, 'not the sum of both workers’ figures');
  });
});
