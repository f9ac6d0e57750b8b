import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { runHaSeed } from './group-run.ts';

describe('a group of masters on the coordination store model', () => {
  it('keeps one leader, fenced writes and every acknowledged shuffle across 150 seeds of drawn failovers', async () => {
    let terms = 0;
    for (let seed = 0; seed < 150; seed += 1) {
      await nextTurn();
      const result = runHaSeed({ seed });
      assert.equal(
        result.violation,
        undefined,
        `seed ${seed} (${result.faults.join(' ')}): ${result.violation?.detail}`,
      );
      terms += result.terms;
    }
    assert.ok(terms > 150, `failovers happened: ${terms} terms served in 150 seeds`);
  });

  it('replays a seed exactly', () => {
    const a = runHaSeed({ seed: 7, trace: true });
    const b = runHaSeed({ seed: 7, trace: true });
    assert.equal(a.trace, b.trace, 'the same trace');
    assert.ok(a.trace.includes('leads term'), 'the trace shows terms');
  });
});
