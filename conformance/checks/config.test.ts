// The recovery store's backend row checks what a worker of the release opens on disk (issue 33), with this
// package's own servers: LevelDB as of 0.4.1, RocksDB as of 0.6.0.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { scratchDir } from '../servers.ts';
import { recoveryBackendRow } from './config.ts';

const SERVER_COMMAND = [process.execPath, path.resolve(import.meta.dirname, '../../bin/svc.mjs')];

describe('9.2/behaviour-svc.worker.graceful.shutdown.recoverDbBackend', () => {
  for (const [release, backend] of [
    ['0.4.1', 'LEVELDB'],
    ['0.6.0', 'ROCKSDB'],
  ] as const) {
    it(`passes for a ${release} worker, whose store on disk is ${backend}`, async () => {
      const scratch = scratchDir();
      try {
        const target = { release, masterUrl: 'http://127.0.0.1:1', workerUrls: [] };
        const [row] = await recoveryBackendRow(target, SERVER_COMMAND, scratch.dir);
        assert.equal(row?.verdict, 'pass', JSON.stringify(row));
        assert.match(row.evidence, new RegExp(`the store on disk is ${backend}`));
      } finally {
        scratch.dispose();
      }
    });
  }
});
