import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration } from './progress.ts';

describe('progress of long runs', () => {
  it('formats the time left without a 60th second or minute', () => {
    assert.equal(formatDuration(0), '0s');
    assert.equal(formatDuration(42.4), '42s');
    assert.equal(formatDuration(599.6), '10m 00s');
    assert.equal(formatDuration(547), '9m 07s');
    assert.equal(formatDuration(3_599.5), '1h 00m');
    assert.equal(formatDuration(3_905), '1h 05m');
    assert.equal(formatDuration(-3), '0s');
  });
});
