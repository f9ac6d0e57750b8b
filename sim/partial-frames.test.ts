import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSeed } from './run.ts';
import { SCENARIOS } from './scenarios.ts';

const swarm = SCENARIOS.swarm!;

describe('partly received frames in the swarm', () => {
  it("pause simulated workers' ports and hold pushes, with every invariant kept", () => {
    let pausedByPartialFrames = 0;
    let heldWhile = 0;
    // Seeds 1 and 4 draw small back-pressure budgets (sim/cluster/scenario.ts): their workers pause on frames in flight.
    for (let seed = 0; seed < 6; seed += 1) {
      const { report, violation } = runSeed({ seed, scenario: swarm });
      assert.equal(violation, undefined, `seed ${seed}: ${violation?.detail}`);
      const paused =
        (report.counts['backPressure.partialFramesPaused.push'] ?? 0) +
        (report.counts['backPressure.partialFramesPaused.replicate'] ?? 0);
      pausedByPartialFrames += paused;
      if (paused > 0) heldWhile += report.counts['backPressure.held.push'] ?? 0;
    }
    assert.ok(pausedByPartialFrames > 0, 'some pause came from partly received frames');
    assert.ok(heldWhile > 0, 'those seeds held pushes on a paused port');
  });

  it("give up a hostile peer's largest stalled frame in the swarm", () => {
    const scenario = SCENARIOS.swarm!;
    let stalled = 0;
    let shed = 0;
    // Seeds 11 and 27 are the first whose peer stalls two frames that together pass a small budget's limit.
    for (let seed = 0; seed < 30 && shed === 0; seed += 1) {
      const { report } = runSeed({ seed, scenario });
      stalled += report.counts['partialFrames.stalled'] ?? 0;
      shed += report.counts['partialFrames.shedStalled'] ?? 0;
    }
    assert.ok(stalled > 0, 'peers stalled frames');
    assert.ok(shed > 0, 'a stalled frame was given up past the limit');
  });
});
