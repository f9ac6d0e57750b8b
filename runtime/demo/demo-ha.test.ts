// `svc demo --ha` as a user runs it: three masters on an etcd the demo starts, the job verified, everything stopped.
// A file of its own: a group's start is slow on a loaded machine, and each file has the runner's 300 s.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { etcdSkipReason } from '../testing/etcd.ts';
import { dataDir, SMALL, stopDemosAfterEach, svcDemo } from '../testing/demo-run.ts';

stopDemosAfterEach();

describe('svc demo --ha', () => {
  it(
    'with --ha, runs the job on a group of three masters on an etcd it starts, then stops them all',
    { skip: etcdSkipReason },
    async () => {
      const run = svcDemo([...SMALL, '--ha']);
      const dir = await dataDir(run);
      const code = await run.exit;
      const output = run.lines.join('\n');
      assert.equal(code, 0, output);
      assert.match(output, /a group of 3 masters on etcd 127\.0\.0\.1:\d+: m1 leads, m2 and m3 follow/);
      assert.match(output, /verification OK: 6 partitions, 8192 records/);
      assert.equal(existsSync(dir), false, 'the temporary directory, etcd’s data with it, is removed');
    },
  );
});
