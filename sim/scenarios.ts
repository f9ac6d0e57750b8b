import { clusterScenario } from './cluster/scenario.ts';
import { DISK_FAULTS_BEFORE_CORRUPTION } from './faults/plan.ts';
import type { Scenario } from './run.ts';
import { demoWorkload, drawWorkload, standardWorkload, upgradeWorkload } from './workload/shape.ts';

/** The scenarios the command line and the tests run, by name. */
export const SCENARIOS: Readonly<Record<string, Scenario>> = {
  /**
   * Every seed draws its own cluster, applications, releases and tiers (swarm testing), and a hostile peer stalls
   * large frames on its workers twice a run (sim/faults/stalled-frames.ts, its own random stream: since 27 November
   * 2026, once a stalled frame could no longer keep a worker paused on its own). A tenth of the seeds also run a
   * group of masters failing over (sim/cluster/ha-share.ts, since 29 November 2026).
   */
  swarm: clusterScenario('swarm', drawWorkload, { stalledFrames: true, haGroup: true }),
  /**
   * The swarm as it drew until 22 November 2026, before it drew policies (rack skew, load-aware slots, partition
   * size updates, rack-aware replicas, HARD splits, small disks), corrupted reads, lost executors, DFS faults and
   * two-sided partitions (and before workers ran out of file descriptors and partitions cut one way): seeds found before then replay here with
   * their old shapes and schedules (docs/simulation.md, Swarm testing).
   */
  'swarm-before-policies': clusterScenario(
    'swarm-before-policies',
    (rng) => drawWorkload(rng, { policies: false }),
    {
      diskFaults: DISK_FAULTS_BEFORE_CORRUPTION,
      taskKills: false,
      dfsFaults: false,
      partitionSides: false,
      descriptorFaults: false,
      oneWayPartitions: false,
    },
  ),
  /** The swarm without the hostile peer that stalls frames, as it ran until 27 November 2026. */
  'swarm-without-stalled-frames': clusterScenario('swarm-without-stalled-frames', drawWorkload),
  /** The benchmark's fixed shape: 20 workers, 4 applications of 200 partitions, replication on. */
  standard: clusterScenario('standard', standardWorkload),
  /** `npm start`: three workers, one replicated application, one job (run without faults). */
  demo: clusterScenario('demo', demoWorkload),
  /**
   * A rolling upgrade of the servers to 0.6.0, then new clients: the order the contract prescribes. Half the seeds
   * run it on a calm network and disks with no other fault, where replicated jobs must not see a task fail.
   */
  'upgrade-right-order': clusterScenario('upgrade-right-order', upgradeWorkload('right'), { calmShare: 0.5 }),
  /** New clients before the servers are upgraded: admission must refuse them and harm no one else's data. */
  'upgrade-wrong-order': clusterScenario('upgrade-wrong-order', upgradeWorkload('wrong'), { calmShare: 0.5 }),
};

export function scenarioNamed(name: string): Scenario {
  const scenario = SCENARIOS[name];
  if (!scenario) {
    throw new RangeError(`'${name}' is not a scenario; expected one of ${Object.keys(SCENARIOS).join(', ')}`);
  }
  return scenario;
}
