// `svc demo` (npm start): a real shuffle job on an embedded local cluster, or on an existing one with --master.
import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseMasterUrl } from '../../conf/index.ts';
import { parseBytes } from '../../conf/values.ts';
import { CURRENT_RELEASE, parseRelease } from '../../core/release/version.ts';
import { DemoFailure, runDemo, type DemoOptions } from '../demo/driver.ts';
import type { ProgressMode } from '../demo/progress.ts';
import { datasetProblem, type DatasetSpec } from '../demo/records.ts';

interface DemoFlags {
  readonly size: number;
  readonly maps: number;
  readonly reduces: number;
  readonly workers: number;
  readonly replication: boolean;
  readonly tier: 'disk' | 'memory' | 'dfs';
  readonly release?: string;
  readonly keep?: boolean;
  readonly master?: string;
  readonly executors: number;
  readonly mapSlots?: number;
  readonly reduceSlots?: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly keys: number;
  readonly seed: number;
  readonly conf: Record<string, string>;
  readonly progress: ProgressMode;
  readonly attempts: number;
  readonly logLevel: string;
  readonly auth?: boolean;
  readonly ha?: boolean;
}

function bytes(value: string): number {
  const parsed = parseBytes(value);
  if (!parsed.ok)
    throw new InvalidArgumentError(`'${value}' is not a size: ${parsed.expected} (e.g. 1g, 256m, 64k)`);
  return parsed.value;
}

function count(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        `expected a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}`,
      );
    }
    return n;
  };
}

function onOff(value: string): boolean {
  switch (value.toLowerCase()) {
    case 'on':
    case 'true':
    case 'yes':
      return true;
    case 'off':
    case 'false':
    case 'no':
      return false;
    default:
      throw new InvalidArgumentError('expected on or off');
  }
}

function release(value: string): string {
  try {
    return parseRelease(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function masterUrl(value: string): string {
  const url = parseMasterUrl(value.includes('://') ? value : `svc://${value}`);
  if (!url.ok) throw new InvalidArgumentError(url.message);
  return value;
}

function setting(value: string, previous: Record<string, string>): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`expected key=value, got '${value}'`);
  return { ...previous, [value.slice(0, at).trim()]: value.slice(at + 1).trim() };
}

/** LocalCluster waits for the servers' `listening` and `worker.registered` lines, logged at info. */
const CLUSTER_LOG_LEVELS = ['info', 'debug', 'trace'] as const;

const DEFAULT_EXECUTORS = Math.max(2, Math.min(4, availableParallelism()));

export function demoCommand(): Command {
  return new Command('demo')
    .description(
      'run a real shuffle job (a group-by of generated records) on an embedded local cluster, with live progress, ' +
        'verify every partition and print the throughput of each phase',
    )
    .addOption(
      new Option('--size <bytes>', 'record bytes the job writes (1g, 256m, …)')
        .argParser(bytes)
        .default(2 ** 30, '1g'),
    )
    .addOption(new Option('--maps <n>', 'map tasks').argParser(count(1, 100_000)).default(8))
    .addOption(
      new Option('--reduces <n>', 'reduce tasks (partitions)').argParser(count(1, 65_536)).default(32),
    )
    .addOption(
      new Option('--workers <n>', 'workers of the local cluster')
        .argParser(count(1, 64))
        .default(3)
        .conflicts('master'),
    )
    .addOption(
      new Option(
        '--replication <on|off>',
        'push every partition to two workers (svc.client.push.replicate.enabled)',
      )
        .argParser(onOff)
        .default(true, 'on'),
    )
    .addOption(
      new Option('--tier <tier>', 'where workers keep partition files')
        .choices(['disk', 'memory', 'dfs'])
        .default('disk'),
    )
    .addOption(
      new Option('--release <version>', 'client release the application and executors behave as').argParser(
        release,
      ),
    )
    .addOption(
      new Option(
        '--auth',
        'application authentication on the whole job (svc.auth.enabled): servers prove an internal secret the ' +
          'demo draws, the application and its executors a secret of their own (never printed)',
      ),
    )
    .addOption(
      new Option(
        '--keep',
        'leave the local cluster up after the job, print its addresses, wait for Ctrl-C',
      ).conflicts('master'),
    )
    .addOption(
      new Option(
        '--ha',
        'run the local cluster with a high-availability group of three masters on an etcd it starts (needs etcd: ' +
          'bash scripts/etcd/install.sh)',
      ).conflicts('master'),
    )
    .addOption(
      new Option(
        '--master <url>',
        'run the job on an existing cluster (svc://host:port) instead of starting one',
      ).argParser(masterUrl),
    )
    .addOption(
      new Option('--executors <n>', 'executor processes running the tasks')
        .argParser(count(1, 64))
        .default(DEFAULT_EXECUTORS),
    )
    .addOption(
      new Option(
        '--map-slots <n>',
        'maps one executor runs at a time (default: as many as ~512 MiB hold, 1 to 4)',
      ).argParser(count(1, 64)),
    )
    .addOption(
      new Option(
        '--reduce-slots <n>',
        'reduces one executor runs at a time (default: by partition size, 1 to 8)',
      ).argParser(count(1, 64)),
    )
    .addOption(new Option('--key-size <bytes>', 'bytes of each key').argParser(bytes).default(16))
    .addOption(new Option('--value-size <bytes>', 'bytes of each value').argParser(bytes).default(1008))
    .addOption(
      new Option('--keys <n>', 'distinct keys (the groups of the group-by)')
        .argParser(count(1))
        .default(100_000),
    )
    .addOption(new Option('--seed <n>', 'seed of the record generator').argParser(count(0)).default(1))
    .addOption(
      new Option('--conf <key=value>', 'a client setting for the application and executors (repeatable)')
        .argParser(setting)
        .default({}, 'none'),
    )
    .addOption(
      new Option(
        '--progress <mode>',
        'bars (a terminal), lines (every 5 s), none; auto: bars on a terminal, none in CI',
      )
        .choices(['auto', 'bars', 'lines', 'none'])
        .default('auto'),
    )
    .addOption(
      new Option('--attempts <n>', 'attempts of one task before the job fails')
        .argParser(count(1, 10))
        .default(3),
    )
    .addOption(
      new Option(
        '--log-level <level>',
        "log level of the local cluster's servers (their logs are files; the cluster is started by waiting for " +
          'their info lines, so no level above info)',
      )
        .choices(CLUSTER_LOG_LEVELS)
        .default('info'),
    )
    .addHelpText(
      'after',
      '\nThe local cluster (one master, --workers workers, as child processes on 127.0.0.1) keeps its data and logs\n' +
        'under a temporary directory, removed on exit and on Ctrl-C (exit 130) unless --keep. Each map generates its\n' +
        'records from the seed and its map id; a record goes to partition crc32(key) mod reduces. After the job the\n' +
        "driver checks every partition (record count, distinct keys, sum and xor of the records' CRC32) against\n" +
        'the generator run again, and exits 1 if any differs.\n\n' +
        'Examples:\n' +
        '  svc demo                                   1 GiB, 8 maps, 32 reduces, replication on, disk tier\n' +
        '  svc demo --size 256m --tier memory --replication off\n' +
        '  svc demo --release 0.3.2                   the same job through a 0.3.x client\n' +
        '  svc demo --auth --size 256m                every connection proves a secret (svc.auth.enabled)\n' +
        '  svc demo --ha --size 256m                  three masters on etcd (m1 leads, m2 and m3 follow)\n' +
        '  svc demo --keep                            then, elsewhere: svc demo --master svc://127.0.0.1:<port>\n\n' +
        `Client release by default: ${CURRENT_RELEASE}. The in-process simulated demo: npm run sim -- --scenario demo.`,
    )
    .action(async (flags: DemoFlags, command: Command) => {
      const spec: DatasetSpec = {
        seed: flags.seed,
        totalBytes: flags.size,
        maps: flags.maps,
        reduces: flags.reduces,
        keyBytes: flags.keySize,
        valueBytes: flags.valueSize,
        distinctKeys: flags.keys,
      };
      const problem = datasetProblem(spec);
      if (problem !== undefined) command.error(`svc demo: ${problem}`, { exitCode: 2 });
      if (flags.replication && flags.master === undefined && flags.workers < 2) {
        command.error(
          'svc demo: replication keeps each partition on two workers: use --workers 2 or more, or --replication off',
          {
            exitCode: 2,
          },
        );
      }
      const options: DemoOptions = {
        spec,
        workers: flags.workers,
        replication: flags.replication,
        tier: flags.tier,
        keep: flags.keep ?? false,
        executors: flags.executors,
        conf: flags.conf,
        progress: flags.progress,
        maxAttempts: flags.attempts,
        logLevel: flags.logLevel,
        auth: flags.auth === true,
        ha: flags.ha === true,
        ...(flags.release === undefined ? {} : { release: flags.release }),
        ...(flags.master === undefined ? {} : { master: flags.master }),
        ...(flags.mapSlots === undefined ? {} : { mapSlots: flags.mapSlots }),
        ...(flags.reduceSlots === undefined ? {} : { reduceSlots: flags.reduceSlots }),
      };
      try {
        process.exitCode = await runDemo(options);
      } catch (error) {
        if (!(error instanceof DemoFailure)) throw error;
        command.error(`svc demo: ${error.message}`, { exitCode: 2 });
      }
      // Sockets and timers of the client library may linger: the demo is over.
      process.exit(process.exitCode);
    });
}
