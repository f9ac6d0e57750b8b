// `npm run chaos -- --minutes N [--seed S] [--workers K] [--apps A] [--faults kill,stall,…] [--hosts] [--ha]`: the full-process
// chaos soak (docs/chaos.md). Exit status 0 when every check passed, 1 with the failure report otherwise.
import { randomBytes } from 'node:crypto';
import { Command, InvalidArgumentError, Option } from 'commander';
import { PLANTED_BUGS, type PlantedBug } from '../../core/planted-bugs.ts';
import { hostsUnavailableReason } from '../cluster/hosts.ts';
import { etcdUnavailable } from '../ha/etcd-process.ts';
import type { Tier } from '../cluster/local-cluster.ts';
import { defaultFaultKinds, parseFaultKinds, unsupportedKinds } from './schedule.ts';
import { runSoak } from './soak.ts';

function positive(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError('a positive number');
  return number;
}

function faultList(value: string): string[] {
  try {
    return parseFaultKinds(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

const program = new Command('chaos')
  .description(
    'starts a local cluster (child processes on loopback, or on namespace hosts with --hosts), runs verified jobs from several applications at once ' +
      "and injects the seed's faults; checks data, liveness under tolerated faults, memory, files and processes",
  )
  .option('--minutes <n>', 'how long jobs are started and faults injected', positive, 2)
  .option('--seed <seed>', 'the seed of the fault schedule and the job stream (default: drawn and printed)')
  .option('--workers <k>', 'workers in the cluster (three tolerate one fault at a time)', positive, 3)
  .option('--apps <a>', 'applications running jobs at once', positive, 3)
  .option(
    '--faults <kinds>',
    `the fault kinds to draw from, comma-separated (default on loopback: ${defaultFaultKinds(false).join(',')}; ` +
      `with --hosts: ${defaultFaultKinds(true).join(',')}; --ha replaces master-restart with ` +
      `leader-kill,leader-freeze and with --hosts leader-partition)`,
    faultList,
  )
  .option(
    '--hosts',
    'run the cluster on namespace hosts (needs root and `ip netns`): network faults are a link cut, one-way and ' +
      'rack partitions instead of the fault proxies',
    false,
  )
  .option(
    '--ha',
    'run the masters as a group of three on an etcd the soak starts (needs etcd: bash scripts/etcd/install.sh), ' +
      'restarted by a supervisor when they exit; draws leader kills, freezes and (with --hosts) partitions',
    false,
  )
  .option(
    '--tiers <tiers>',
    'the tiers jobs draw from, comma-separated: disk,memory,dfs (default all)',
    (value: string) =>
      value.split(',').map((tier) => {
        if (!['disk', 'memory', 'dfs'].includes(tier.trim()))
          throw new InvalidArgumentError(`unknown tier ${tier}`);
        return tier.trim() as Tier;
      }),
  )
  .option('--replicate-share <p>', 'share of jobs that replicate, 0..1', Number, 0.7)
  .addOption(
    new Option(
      '--planted-bug <name>',
      'test only: servers run with a deliberate bug of core/planted-bugs.ts',
    ).choices(PLANTED_BUGS),
  )
  .option('--keep', 'keep the cluster directory (logs, data) even when every check passed', false);

program.parse();
const flags = program.opts<{
  minutes: number;
  seed?: string;
  workers: number;
  apps: number;
  faults?: string[];
  tiers?: Tier[];
  replicateShare: number;
  keep: boolean;
  hosts: boolean;
  ha: boolean;
  plantedBug?: PlantedBug;
}>();

// Never a silent fallback to loopback: a soak asked for a real network either has one or stops here.
if (flags.hosts) {
  const reason = await hostsUnavailableReason();
  if (reason !== undefined) {
    console.error(`[chaos] --hosts: cannot run the cluster on namespace hosts: ${reason}`);
    process.exit(2);
  }
}
if (flags.ha) {
  const reason = etcdUnavailable();
  if (reason !== undefined) {
    console.error(`[chaos] --ha: cannot run a group of masters: ${reason}`);
    process.exit(2);
  }
}
const kinds = flags.faults === undefined ? undefined : parseFaultKinds(flags.faults.join(','));
const unsupported = kinds === undefined ? undefined : unsupportedKinds(kinds, flags.hosts, flags.ha);
if (unsupported !== undefined) {
  console.error(`[chaos] --faults: ${unsupported}`);
  process.exit(2);
}

const result = await runSoak({
  seed: flags.seed ?? randomBytes(4).toString('hex'),
  durationMs: Math.round(flags.minutes * 60_000),
  workers: Math.round(flags.workers),
  apps: Math.round(flags.apps),
  ...(kinds === undefined ? {} : { kinds }),
  hosts: flags.hosts,
  ha: flags.ha,
  replicateShare: flags.replicateShare,
  ...(flags.tiers === undefined ? {} : { tiers: flags.tiers }),
  keep: flags.keep,
  ...(flags.plantedBug === undefined ? {} : { plantedBug: flags.plantedBug }),
});
process.exit(result.violations.length === 0 ? 0 : 1);
