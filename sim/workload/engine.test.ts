import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeId } from '../../core/machines/effects.ts';
import { lifecycleManagerNodeId } from '../../core/protocol/node-ids.ts';
import { clusterScenario } from '../cluster/scenario.ts';
import { CALM_KNOBS, type Fault } from '../faults/plan.ts';
import { runSeed, type RunResult, type Scenario } from '../run.ts';
import type { World } from '../world/world.ts';
import { namedMaps } from './engine.ts';
import { demoWorkload, type JobShape } from './shape.ts';

/** The demo cluster running one small job whose tasks take time, in `taskSlots` slots. */
function timedJob(
  taskSlots: number,
  job: Pick<JobShape, 'mapComputeMs' | 'reduceComputeMs'>,
  executorCores?: number,
): Scenario {
  const maps = job.mapComputeMs?.length ?? 2;
  const partitions = job.reduceComputeMs?.length ?? 6;
  return clusterScenario('timed-job', (rng) => {
    const shape = demoWorkload(rng);
    const app = shape.apps[0]!;
    return {
      ...shape,
      apps: [
        {
          ...app,
          taskSlots,
          ...(executorCores === undefined ? {} : { executorCores }),
          jobs: [
            {
              numMappers: maps,
              numPartitions: partitions,
              records: [...Array(maps).keys()].map(() => [...Array(partitions).keys()].map(() => 2)),
              recordBytes: 64,
              speculative: [],
              ...job,
            },
          ],
        },
      ],
    };
  });
}

/**
 * Runs a scenario without faults and notes when each task process started (virtual ms, by node) and how many
 * messages of each type the lifecycle manager received.
 */
function runCalm(scenario: Scenario): {
  result: RunResult;
  starts: Map<NodeId, number>;
  lmReceived: Map<string, number>;
} {
  const starts = new Map<NodeId, number>();
  const lmReceived = new Map<string, number>();
  const watched: Scenario = {
    name: scenario.name,
    build(world, context) {
      const run = scenario.build(world, context);
      return {
        ...run,
        observers: [
          ...run.observers,
          { onStart: (node, w) => void (starts.has(node) || starts.set(node, w.now)) },
          {
            inputs: ['receive'],
            onInput: (node, input) => {
              if (input.kind !== 'receive' || !node.startsWith('lm-')) return;
              const type = input.envelope.message.type;
              lmReceived.set(type, (lmReceived.get(type) ?? 0) + 1);
            },
          },
        ],
      };
    },
  };
  const result = runSeed({
    seed: 1,
    scenario: watched,
    schedule: { knobs: { ...CALM_KNOBS, stormMs: 0 }, faults: [] },
  });
  assert.equal(result.violation, undefined, JSON.stringify(result.violation));
  assert.equal(result.report.counts['apps.done'], 1, JSON.stringify(result.report));
  return { result, starts, lmReceived };
}

function startsOf(starts: Map<NodeId, number>, prefix: string): number[] {
  return [...starts]
    .filter(([node]) => node.startsWith(prefix))
    .map(([, at]) => at)
    .sort((a, b) => a - b);
}

describe('the compute engine model', () => {
  it('starts a map writing once it has computed for its compute time', () => {
    const { starts } = runCalm(timedJob(4, { mapComputeMs: [3_000, 5_000] }));
    assert.equal(starts.get('map-demo-0-0-0'), 3_000);
    assert.equal(starts.get('map-demo-0-1-0'), 5_000);
  });

  it('runs no more tasks at once than the application has slots', () => {
    const reduceComputeMs = [400, 400, 400, 400, 400, 400, 400];
    const { result, starts } = runCalm(timedJob(2, { mapComputeMs: [1_000, 1_000, 1_000], reduceComputeMs }));
    // Three maps in two slots: the third waits until one of the first two has computed and written.
    const maps = startsOf(starts, 'map-demo-');
    assert.deepEqual(maps.slice(0, 2), [1_000, 1_000]);
    assert.ok(maps[2]! > 2_000, `third map started at ${maps[2]}`);
    // A reducer's slot frees no sooner than its compute time after it started: waves of two.
    const reducers = startsOf(starts, 'reduce-demo-');
    assert.equal(reducers.length, reduceComputeMs.length);
    for (let i = 2; i < reducers.length; i += 1)
      assert.ok(reducers[i]! >= reducers[i - 2]! + 400, `reducer start times ${reducers.join(', ')}`);
    // Four waves of reducers after the maps: the job lasts at least that long.
    assert.ok(result.simulatedMs >= maps[2]! + 4 * 400, `job ended at ${result.simulatedMs}`);
  });

  it("asks the lifecycle manager for a shuffle's file group once per executor, not once per reducer", () => {
    const reduceComputeMs = [...Array(12).keys()].map(() => 300);
    // Four slots in two executors of two: in the first wave one reducer of each executor asks and the other waits
    // for its ask (single flight); the two later waves read with what their executor was told.
    const cached = runCalm(timedJob(4, { mapComputeMs: [500, 500], reduceComputeMs }, 2));
    assert.equal(cached.lmReceived.get('GetReducerFileGroup'), 2);
    assert.equal(startsOf(cached.starts, 'reduce-demo-').length, 12);
    // Without task slots every reducer is its own process and asks for itself.
    const uncached = runCalm(timedJob(Number.POSITIVE_INFINITY, { reduceComputeMs }));
    assert.equal(uncached.lmReceived.get('GetReducerFileGroup'), 12);
  });

  it('runs a task again when its executor is lost: a new attempt of a map killed mid-write, the reducer again', () => {
    const scenario = timedJob(4, { mapComputeMs: [3_000, 5_000], reduceComputeMs: [200, 200, 200, 200] });
    const run = (faults: Fault[]) => {
      const result = runSeed({
        seed: 1,
        scenario,
        trace: true,
        schedule: { knobs: { ...CALM_KNOBS, stormMs: 0 }, faults },
      });
      assert.equal(result.violation, undefined, JSON.stringify(result.violation));
      assert.equal(result.report.counts['apps.done'], 1, 'the job still reads every record exactly once');
      return result.trace.split('\n');
    };
    const mapKill: Fault = { kind: 'kill', at: 3_001, target: 'a0', task: 'map' };
    const afterMapKill = run([mapKill]);
    assert.ok(
      afterMapKill.some((line) => /map-demo-0-0-0 +CRASH/.test(line)),
      'map 0 attempt 0 was killed',
    );
    assert.ok(
      afterMapKill.some((line) => /map-demo-0-0-1 +START/.test(line)),
      'map 0 ran again as attempt 1',
    );

    // The first reducer's start in that run, plus a millisecond: it is still reading.
    const firstStart = afterMapKill.find((line) => /reduce-demo-0-\d+ +START/.test(line))!;
    const at = Math.round(Number(/^\s*([\d.]+)s/.exec(firstStart)![1]) * 1_000) + 1;
    const lines = run([mapKill, { kind: 'kill', at, target: 'a0', task: 'reduce' }]);
    const killed = lines.find((line) => /reduce-demo-0-\d+ +CRASH/.test(line));
    assert.ok(killed, 'a reducer was killed');
    const reducer = /(reduce-demo-0-\d+)/.exec(killed)![1]!;
    assert.ok(
      lines.some((line) => new RegExp(`${reducer} +RELAUNCH`).test(line)),
      `${reducer} ran again`,
    );
  });

  it('runs every task at once when the application sets no compute times', () => {
    const { starts } = runCalm(timedJob(Number.POSITIVE_INFINITY, {}));
    // (Retries may follow: the workers of a cluster that has just started may not have registered yet.)
    assert.equal(starts.get('map-demo-0-0-0'), 0);
    assert.equal(starts.get('map-demo-0-1-0'), 0);
    const reducers = startsOf(starts, 'reduce-demo-');
    assert.equal(new Set(reducers).size, 1, `reducers started together: ${reducers.join(', ')}`);
  });
});

describe('the compute engine without stage rerun', () => {
  /**
   * The demo job with its data in worker memory, no replica and no stage rerun, read a second time 6 s after the
   * first read: a worker crash between the two reads loses that worker's partitions for good.
   */
  const memoryOnly: Scenario = clusterScenario('memory-only-job', (rng) => {
    const shape = demoWorkload(rng);
    const app = shape.apps[0]!;
    return {
      cluster: {
        ...shape.cluster,
        workers: shape.cluster.workers.map((worker) => ({ ...worker, memoryBytes: 64 * 1024 * 1024 })),
      },
      apps: [
        {
          ...app,
          replicate: false,
          stageRerun: false,
          availableTypes: ['MEMORY', 'HDD'],
          jobs: app.jobs.map((job) => ({ ...job, rereadAfterMs: 6_000 })),
        },
      ],
    };
  });
  const calm = { ...CALM_KNOBS, stormMs: 0 };

  it('ends the job with the expected failure only once the data itself could not be read after the faults', () => {
    const result = runSeed({
      seed: 1,
      scenario: memoryOnly,
      trace: true,
      schedule: { knobs: calm, faults: [{ kind: 'crash', at: 4_000, target: 'w0', downFor: 500 }] },
    });
    assert.equal(result.violation, undefined, JSON.stringify(result.violation));
    assert.equal(result.report.counts['apps.failed'], 1);
    const note = result.report.notes.find((text) => text.startsWith('demo (client 0.6.0) failed'));
    assert.match(note ?? '', /fetch failure with stage rerun disabled.*cannot read shuffle 0 partition/);
    // Every reducer of the lost partitions failed with unreadable data more than three times after the crash.
    assert.ok(
      result.trace.split('\n').filter((line) => /reduce task failed .*kind="unreadable"/.test(line)).length >
        3,
      'result.trace.split(\'\\n\').filter((line) => /reduce task failed .*kind="unreadable"/.test(line)).length > 3',
    );
  });

  /**
   * The memory-only job with a crash of `crashed` at 4 s (the faults end at 4.5 s) and, at `at`, something the
   * schedule does not explain.
   */
  const withOutsideEvent = (crashed: string, at: number, label: string, event: (world: World) => void) =>
    runSeed({
      seed: 1,
      scenario: {
        name: memoryOnly.name,
        build(world, context) {
          const run = memoryOnly.build(world, context);
          world.schedule(at, `test: ${label}`, event);
          return run;
        },
      },
      schedule: { knobs: calm, faults: [{ kind: 'crash', at: 4_000, target: crashed, downFor: 500 }] },
    });

  it('does not take a reducer that cannot reach its lifecycle manager for lost data: that is a liveness failure', () => {
    // The driver's lifecycle manager dies for good after the first read (a worker crash makes data loss possible):
    // every reducer of the second read fails without reading anything, which no retry cures.
    const result = withOutsideEvent('w2', 4_000, 'the lifecycle manager dies', (w) =>
      w.crash(lifecycleManagerNodeId('demo')),
    );
    assert.equal(result.violation?.invariant, 'liveness', JSON.stringify(result.violation));
    assert.match(result.violation?.detail ?? '', /did not answer GetReducerFileGroup/);
  });

  it('calls a reducer that started after the faults and cannot read intact data an unexpected fetch failure', () => {
    // A cut between the reducers and the workers that no fault of the schedule explains: the data is intact, so
    // failing to read it is not data loss.
    const result = withOutsideEvent('w0', 5_000, 'reducers lose the workers', (w) =>
      w.network.partition(
        (node) => node.startsWith('reduce-demo'),
        (node) => node.startsWith('host'),
      ),
    );
    assert.equal(result.violation?.invariant, 'unexpected-fetch-failure', JSON.stringify(result.violation));
    assert.match(
      result.violation?.detail ?? '',
      /started after the faults ended and found its data unreadable, yet every epoch has an intact committed copy on a worker that ran throughout \(epoch 0 PRIMARY on host[12]/,
    );
  });

  it('does not call a job failed while the data is still readable, however the faults went', () => {
    const result = runSeed({ seed: 1, scenario: memoryOnly, schedule: { knobs: calm, faults: [] } });
    assert.equal(result.violation, undefined, JSON.stringify(result.violation));
    assert.equal(result.report.counts['apps.done'], 1);
  });
});

describe('namedMaps', () => {
  it('names one map, a few, or the first eight and how many more', () => {
    assert.equal(namedMaps([3]), 'map 3');
    assert.equal(namedMaps([0, 1, 2]), 'maps 0, 1, 2');
    assert.equal(namedMaps([...Array(20).keys()]), 'maps 0, 1, 2, 3, 4, 5, 6, 7 and 12 more');
  });
});
