import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DiskInfo } from '../../domain/index.ts';
import type { FileRef } from '../effects.ts';
import { masterNodeId } from '../../protocol/node-ids.ts';
import { workerMachine } from './machine.ts';
import { initialWorkerState } from './state.ts';
import { diskInfos, recordLatency } from './storage-view.ts';
import { Harness, onlySent, SELF, workerId } from './test-kit.ts';
import { testWorkerConfig } from './testing.ts';

/**
 * recordLatency keeps one moving average per disk and kind (flush, fetch), updated in place: the averages must be
 * exactly the 1/8-weighted ones of the samples, per disk, and what diskInfos reported earlier must not move with them.
 */

const FILES: readonly FileRef[] = [
  { id: 'a', tier: 'HDD', mountPoint: '/disk1' },
  { id: 'b', tier: 'HDD', mountPoint: '/disk2' },
  { id: 'c', tier: 'HDFS', mountPoint: '' },
  { id: 'd', tier: 'MEMORY', mountPoint: '' },
];

const sampleArb = fc.record({
  file: fc.constantFrom(...FILES),
  kind: fc.constantFrom<'flush' | 'fetch'>('flush', 'fetch'),
  elapsedMs: fc.integer({ min: 0, max: 5_000 }),
});

/** The average the worker should report: the first sample, then each next one weighted 1/8. */
function average(samplesNs: readonly number[]): number {
  let avg = 0;
  for (const sample of samplesNs) avg = avg === 0 ? sample : avg + (sample - avg) / 8;
  return avg;
}

describe('worker: disk timings', () => {
  it('averages each disk’s flush and fetch samples, and leaves earlier reports as they were', () => {
    fc.assert(
      fc.property(fc.array(sampleArb, { maxLength: 60 }), (samples) => {
        const config = testWorkerConfig(workerId('w1'), { distributed: ['HDFS'] });
        let state = initialWorkerState(config);
        const reports: { report: DiskInfo[]; copy: DiskInfo[] }[] = [];
        for (const { file, kind, elapsedMs } of samples) {
          state = recordLatency(state, file, kind, elapsedMs);
          const report = diskInfos(state);
          reports.push({ report, copy: structuredClone(report) });
        }
        for (const info of diskInfos(state)) {
          const of = (kind: 'flush' | 'fetch') =>
            average(
              samples
                .filter((s) => s.kind === kind && s.file.tier !== 'MEMORY')
                .filter((s) => (s.file.tier === 'HDD' ? s.file.mountPoint : s.file.tier) === info.mountPoint)
                .map((s) => s.elapsedMs * 1e6),
            );
          assert.equal(info.avgFlushTimeNs, of('flush'), `${info.mountPoint}: flush`);
          assert.equal(info.avgFetchTimeNs, of('fetch'), `${info.mountPoint}: fetch`);
        }
        for (const { report, copy } of reports)
          assert.deepEqual(report, copy, 'an earlier report is unchanged');
      }),
      { numRuns: 200 },
    );
  });
});

describe('worker: disk space as the filesystem has it', () => {
  it('registers with the space observed at start and heartbeats the space observed since, less the reserve', () => {
    const GiB = 2 ** 30;
    const harness = new Harness(
      workerMachine,
      initialWorkerState(
        testWorkerConfig(SELF, {
          disks: [
            {
              mountPoint: '/disk1',
              type: 'HDD',
              capacityBytes: 252 * GiB,
              filesystem: { availableBytes: 77 * GiB, totalBytes: 252 * GiB, filesystem: '64769' },
            },
          ],
          diskReserve: { bytes: 5 * GiB },
          heartbeatIntervalMs: 30_000,
        }),
      ),
    );
    const register = onlySent(harness.step({ kind: 'start', recovered: new Map() }), 'RegisterWorker');
    assert.deepEqual(
      register.message.disks.map(({ usableBytes, totalBytes, filesystem, filesystemUsableBytes }) => ({
        usableBytes,
        totalBytes,
        filesystem,
        filesystemUsableBytes,
      })),
      [
        {
          usableBytes: 72 * GiB,
          totalBytes: 252 * GiB,
          filesystem: '64769',
          filesystemUsableBytes: 72 * GiB,
        },
      ],
    );
    harness.receive(
      masterNodeId(),
      { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
      { inReplyTo: register.requestId!, principal: { kind: 'server' } },
    );
    harness.step({
      kind: 'diskSpace',
      disks: [
        { mountPoint: '/disk1', availableBytes: 40 * GiB, totalBytes: 252 * GiB, filesystem: '64769' },
        { mountPoint: '/not-a-disk', availableBytes: GiB, totalBytes: GiB },
      ],
    });
    const beat = onlySent(harness.timer('heartbeat', harness.now + 30_000), 'WorkerHeartbeat');
    assert.deepEqual(
      beat.message.disks.map((disk) => [disk.mountPoint, disk.usableBytes]),
      [['/disk1', 35 * GiB]],
    );
  });

  it('reports the filesystem’s usable space apart from what the disk’s own capacity leaves', () => {
    const GiB = 2 ** 30;
    const harness = new Harness(
      workerMachine,
      initialWorkerState(
        testWorkerConfig(SELF, {
          disks: [
            {
              mountPoint: '/disk1',
              type: 'HDD',
              // Two workers sharing the filesystem, each given a capacity of its own.
              capacityBytes: 30 * GiB,
              filesystem: { availableBytes: 77 * GiB, totalBytes: 252 * GiB, filesystem: '64769' },
            },
          ],
          diskReserve: { bytes: 5 * GiB },
        }),
      ),
    );
    const register = onlySent(harness.step({ kind: 'start', recovered: new Map() }), 'RegisterWorker');
    const [reported] = register.message.disks;
    assert.equal(reported?.usableBytes, 30 * GiB, 'the disk’s own capacity');
    assert.equal(
      reported?.filesystemUsableBytes,
      72 * GiB,
      'the filesystem’s available space less the reserve',
    );
  });
});
