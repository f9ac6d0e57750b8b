import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocatorAdvice,
  allocatorEnvironment,
  allocatorTuned,
  MALLOC_MMAP_THRESHOLD_BYTES,
  MALLOC_TRIM_THRESHOLD_BYTES,
  onGlibc,
} from './allocator.ts';

describe('the allocator setting of server processes', () => {
  it('fixes the mmap and trim thresholds unless the environment already sets them', () => {
    const trim = { MALLOC_TRIM_THRESHOLD_: String(MALLOC_TRIM_THRESHOLD_BYTES) };
    const mmap = { MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD_BYTES) };
    assert.deepEqual(allocatorEnvironment({}), { ...mmap, ...trim });
    assert.deepEqual(allocatorEnvironment({ MALLOC_MMAP_THRESHOLD_: '131072' }), trim);
    assert.deepEqual(allocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=4194304' }), trim);
    assert.deepEqual(allocatorEnvironment({ MALLOC_TRIM_THRESHOLD_: '131072' }), mmap);
    assert.deepEqual(
      allocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=1' }),
      {},
    );
  });

  it('reads glibc tunables among others', () => {
    assert.equal(
      allocatorTuned({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1' }),
      true,
    );
    assert.equal(allocatorTuned({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }), false);
  });

  it('advises a server on glibc without it, naming the variable, and nobody else', () => {
    assert.match(allocatorAdvice({}, true) ?? '', /MALLOC_MMAP_THRESHOLD_=16777216/);
    assert.equal(allocatorAdvice({ MALLOC_MMAP_THRESHOLD_: '16777216' }, true), undefined);
    assert.equal(allocatorAdvice({}, false), undefined);
  });

  it('reads the diagnostic report without naming sockets, and only when the threshold is not fixed', (t) => {
    // Naming a socket's peer is a synchronous reverse DNS lookup: seconds per address where DNS does not answer.
    const report = process.report as { excludeNetwork?: boolean };
    const before = report.excludeNetwork;
    const seen: (boolean | undefined)[] = [];
    const getReport = t.mock.method(process.report, 'getReport', () => {
      seen.push(report.excludeNetwork);
      return { header: { glibcVersionRuntime: '2.36' } };
    });
    assert.equal(allocatorAdvice({ MALLOC_MMAP_THRESHOLD_: '16777216' }), undefined);
    assert.equal(getReport.mock.callCount(), 0, 'a fixed threshold needs no report');
    assert.equal(onGlibc(), process.platform === 'linux');
    if (process.platform === 'linux') assert.deepEqual(seen, [true], 'the report excluded the network');
    assert.equal(report.excludeNetwork, before, 'the report setting is left as it was');
  });
});
