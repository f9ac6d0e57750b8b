import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { formatFaults, formatKnobs, parseFaults, parseKnobs } from './faults/plan.ts';
import { drawnSchedule, replayCommand, runSeed } from './run.ts';
import { SCENARIOS } from './scenarios.ts';

const swarm = SCENARIOS.swarm!;

/** The fixed range `npm test` runs; a longer range is the soak's job (`npm run sim -- --soak`). */
const TEST_SEEDS = 100;

describe('the simulator on the swarm scenario', () => {
  it(`finds no violation in seeds 0..${TEST_SEEDS - 1}`, async () => {
    const failures: string[] = [];
    for (let seed = 0; seed < TEST_SEEDS; seed += 1) {
      await nextTurn(); // a turn of the event loop between seeds: the test watchdog sees a long run progress
      const result = runSeed({ seed, scenario: swarm });
      if (result.violation) {
        failures.push(
          `seed ${seed}: ${result.violation.invariant}: ${result.violation.detail}\n  replay: ${replayCommand(result, result.schedule)}`,
        );
      }
    }
    assert.deepEqual(failures, []);
  });

  it('replays a seed byte for byte, and another seed differs', () => {
    const first = runSeed({ seed: 11, scenario: swarm, trace: true });
    const again = runSeed({ seed: 11, scenario: swarm, trace: true });
    assert.ok(first.trace.length > 1000, 'the trace says what happened');
    assert.equal(again.trace, first.trace);
    assert.notEqual(runSeed({ seed: 12, scenario: swarm, trace: true }).trace, first.trace);
  });

  it('runs the same with the schedule given as text as with the schedule the seed draws', () => {
    for (const seed of [3, 4, 5]) {
      const drawn = runSeed({ seed, scenario: swarm, trace: true });
      const schedule = drawnSchedule(swarm, seed);
      assert.deepEqual(schedule, drawn.schedule);
      const text = { faults: formatFaults(schedule.faults), knobs: formatKnobs(schedule.knobs) };
      const replayed = runSeed({
        seed,
        scenario: swarm,
        trace: true,
        schedule: { faults: parseFaults(text.faults), knobs: parseKnobs(text.knobs) },
      });
      assert.equal(replayed.trace, drawn.trace, `seed ${seed}`);
    }
  });

  it('upgrades servers in the right order without refusing anyone, and refuses new clients in the wrong order', async () => {
    const notes = async (name: string) => {
      const all: string[] = [];
      for (let seed = 0; seed < 15; seed += 1) {
        await nextTurn();
        const result = runSeed({ seed, scenario: SCENARIOS[name]! });
        assert.equal(result.violation, undefined, `${name} seed ${seed}: ${result.violation?.detail ?? ''}`);
        all.push(...result.report.notes);
      }
      return all;
    };
    assert.deepEqual(
      (await notes('upgrade-right-order')).filter((note) => note.includes('refused by admission')),
      [],
    );
    const refusals = (await notes('upgrade-wrong-order')).filter((note) =>
      note.includes('refused by admission'),
    );
    assert.ok(refusals.length > 0, 'the wrong order is refused');
    for (const refusal of refusals) {
      assert.match(
        refusal,
        /client 0\.6\.0\) failed: refused by admission: server release 0\.[345]\.\d refuses client release 0\.6\.0/,
      );
      assert.match(refusal, /upgrade masters and workers first, then clients/);
    }
  });

  it('keeps seeds that once failed passing (a sealed file re-excluding its worker; an exclusion the master refused; a drain plus an exclusion outlasting the liveness bound; a lift lost to a master restart; shuffle ids reused after 100 stage reruns; a decommission the operator called off; a decommission holding the only other worker; a revive epoch handed out twice; an Immediately that cut a graceful drain short; a disk append larger than its first slab; slots booked but not persisted before a master restart; a file a crash left behind that failed its name forever; a graceful exit held up by a lost acknowledgement; a read reaching a worker between the drop of an immediate exit and its end; an offer whose answer never left a leader cut off from its store; a restart that forgot a disk’s last reported budget; an exclusion lost with a frozen leader, asked again after its lift; a Recommission dropped when its idle worker registered again; healthy senders closed for their partly received frames; a paused master offering a worker silent past its timeout; a reducer asking a restarting worker for an epoch committed empty)', () => {
    for (const [name, seed] of [
      ['swarm-before-policies', 2496],
      ['standard', 202],
      ['swarm-before-policies', 3808],
      ['swarm-before-policies', 4697],
      ['swarm-before-policies', 5846],
      ['swarm-before-policies', 6281],
      ['swarm-before-policies', 14595],
      ['swarm-before-policies', 60226],
      ['swarm-before-policies', 13399],
      ['swarm-before-policies', 9152],
      ['swarm-before-policies', 55088],
      ['swarm', 268654],
      ['swarm', 637959],
      ['swarm', 12805],
      ['swarm', 53878],
      ['swarm', 84434],
      ['swarm', 123931],
      ['swarm', 135234],
      ['swarm', 150727],
      ['swarm', 157058],
      ['swarm', 346665],
      ['swarm', 419161],
      ['upgrade-right-order', 381476],
      ['upgrade-right-order', 382781],
    ] as const) {
      const result = runSeed({ seed, scenario: SCENARIOS[name]! });
      assert.equal(result.violation, undefined, `${name} seed ${seed}: ${result.violation?.detail ?? ''}`);
    }
  });

  it('prints the same trace from the command line twice', () => {
    const run = () =>
      spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--seed', '7', '--trace'], {
        cwd: new URL('..', import.meta.url).pathname,
        encoding: 'utf8',
      });
    const first = run();
    const second = run();
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /ok {3}seed 7/);
    assert.equal(second.stdout, first.stdout);
  });

  it('names, by seed, every application of a run of many seeds that used memory without enabling it', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'sim/cli.ts', '--seeds', '40', '--jobs', '1', '--no-shrink'],
      { cwd: new URL('..', import.meta.url).pathname, encoding: 'utf8' },
    );
    assert.equal(run.status, 0, run.stderr);
    const counted = Number(/memoryWithoutEnabling=(\d+)/.exec(run.stdout)?.[1] ?? 0);
    assert.ok(counted > 0, 'seeds 0-39 include old clients that revive into memory');
    const named = run.stdout
      .split('\n')
      .filter((line) => /^ {2}seed \d+: .* without enabling MEMORY/.test(line));
    assert.equal(named.length, counted, run.stdout);
    assert.match(run.stdout, new RegExp(`memory without enabling .*: ${counted} application`));
  });
});
