import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocatorAdvice,
  allocatorEnvironment,
  allocatorTuned,
  MALLOC_MMAP_THRESHOLD_BYTES,
} from './allocator.ts';

describe('the allocator setting of server processes', () => {
  it('fixes the mmap threshold unless the environment already sets it', () => {
    assert.deepEqual(allocatorEnvironment({}), {
      MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD_BYTES),
    });
    assert.deepEqual(allocatorEnvironment({ MALLOC_MMAP_THRESHOLD_: '131072' }), {});
    assert.deepEqual(allocatorEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=4194304' }), {});
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
});
