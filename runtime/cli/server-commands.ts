// `svc master` and `svc worker`: resolve the configuration, start the server, stop it on SIGTERM/SIGINT.
import { Command, Option } from 'commander';
import { formatProblem, masterEndpoints, noEffectWarning, type ResolvedConfig } from '../../conf/index.ts';
import { createLogger, LOG_LEVELS, type Logger, type LogLevelName } from '../log.ts';
import { allocatorAdvice } from '../process/allocator.ts';
import { runMaster } from '../process/master.ts';
import type { RunningServer, ServerTestHooks } from '../process/server-parts.ts';
import { loadServerConfig, ServerConfigError } from '../process/server-config.ts';
import { onStopSignals } from '../process/signals.ts';
import { TransportConfigError } from '../transport/tls.ts';
import { runWorker } from '../process/worker.ts';

interface ServerFlags {
  readonly confFile?: string;
  readonly conf: string[];
  readonly logLevel: LogLevelName;
  readonly release?: string;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function serverCommand(name: 'master' | 'worker', description: string): Command {
  return new Command(name)
    .description(description)
    .option('--conf-file <path>', 'properties file of svc settings (key value or key=value per line)')
    .option(
      '--conf <key=value>',
      'a setting, overriding the file and the environment (repeatable), e.g. --conf svc.worker.rpc.port=0',
      collect,
      [],
    )
    .addOption(
      new Option('--log-level <level>', 'least severe log level written (JSON lines on stdout)')
        .choices(LOG_LEVELS)
        .default('info'),
    )
    .option(
      '--release <x.y.z>',
      'the release this server presents (handshakes, legacy paths, metric names, the machine configuration), ' +
        'as during a rolling upgrade; its settings are checked and read as of that release, defaults included (a key ' +
        'introduced later takes its current value; a key the current release removed is accepted while the ' +
        'presented release still reads it). Default: current',
    );
}

/** The configuration a server runs on (current release) and, with --release, the one it presents. */
function serverConfigs(
  role: 'master' | 'worker',
  flags: ServerFlags,
): { conf: ResolvedConfig; presented: ResolvedConfig } {
  if (flags.release === undefined) {
    const conf = loadServerConfig(role, flags);
    return { conf, presented: conf };
  }
  // A server presenting an older release starts with that release's configuration: a key the current release
  // removed but the presented one still reads (a rolling upgrade's old properties file) is not an error.
  // It behaves as that release too: every key that release has resolves as of it (a default the contract says
  // changed, such as the recovery store's backend, is that release's); a key introduced later names behaviour that
  // existed before it had a key, and the current release's value stands in.
  const presented = loadServerConfig(role, flags);
  const current = loadServerConfig(role, { ...flags, release: undefined, acceptRemovedKeys: true });
  return { conf: presented.withLaterKeysFrom(current), presented };
}

/**
 * Logs each warning of the configuration a server starts with (an older key name and the one to write instead, an
 * unknown key and the nearest known one): the server starts, and says what to change (contract 9.2). Keys that are
 * set but change nothing in svc (issue 33) are listed in one more line.
 */
function logConfigWarnings(logger: Logger, conf: ResolvedConfig): void {
  for (const problem of conf.problems)
    if (problem.severity !== 'error')
      logger.warn(
        { event: 'config.warning', code: problem.code, key: problem.subject },
        formatProblem(problem),
      );
  const withoutEffect = noEffectWarning(conf);
  if (withoutEffect !== undefined) {
    const keys = [...new Set(conf.settingsWithoutEffect.map((setting) => setting.key))];
    logger.warn({ event: 'config.noEffect', keys }, withoutEffect);
  }
}

/** Runs a server until it stops; its exit code becomes the process's. Configuration errors exit 2 with the list. */
async function serve(
  role: 'master' | 'worker',
  start: () => Promise<RunningServer>,
  level: LogLevelName,
): Promise<void> {
  let server: RunningServer | undefined;
  if (process.env.SVC_EXIT_WITH_PARENT === '1') {
    // Started by a local cluster (runtime/cluster): its end closes our stdin, and we stop at once with it. Watched
    // from the start: a master of a group waits to be elected before its start returns.
    process.stdin.on('close', () => {
      if (server === undefined) process.exit(0);
      void server.shutdown(0, 'the process that started this server is gone');
    });
    process.stdin.resume();
  }
  try {
    server = await start();
  } catch (error) {
    if (!(error instanceof ServerConfigError || error instanceof TransportConfigError)) throw error;
    console.error(`svc ${role}: ${error.message}`);
    process.exit(2);
  }
  const logger = createLogger(level, { role, node: server.nodeId });
  const advice = allocatorAdvice();
  if (advice !== undefined) logger.warn({ event: 'process.allocatorUntuned' }, advice);
  const running = server;
  onStopSignals(logger, () => {
    if (running.requestExit === undefined) {
      void running.shutdown(0, 'signal');
      return;
    }
    running.requestExit().then(
      (answer) => {
        if (!answer.success)
          void running.shutdown(0, `signal; the machine refused its exit: ${answer.message}`);
      },
      // The node stopped before answering (its own exit, a failed store): it is already on its way out.
      () => undefined,
    );
  });
  process.exit(await running.stopped);
}

/** `testing`: only the test-only entry runtime/testing/test-server.ts passes it (ServerTestHooks). */
export function masterCommand(testing: ServerTestHooks = {}): Command {
  return serverCommand('master', 'run a master (svc.master.host:svc.master.port; port 0 takes a free one)')
    .addHelpText(
      'after',
      '\nThe master prints one JSON line with "event":"listening" and its bound address, then logs as JSON lines.\n' +
        'Its durable state lives under svc.master.state.dir (svc.master.state.dbBackend: ROCKSDB or LEVELDB).\n' +
        'Management interface and metrics: svc.master.http.host, svc.master.http.port (0: a free one, in the\n' +
        '"http" field of the listening line); authentication svc.master.http.auth.*; TLS svc.ssl.* and\n' +
        'svc.master.http.ssl.enabled. Every key: npx svc conf show --role master, docs/configuration.md.',
    )
    .action(async (flags: ServerFlags) => {
      await serve(
        'master',
        async () => {
          const { conf, presented } = serverConfigs('master', flags);
          const logger = createLogger(flags.logLevel, { role: 'master', node: 'master-0' });
          logConfigWarnings(logger, conf);
          return runMaster({ conf, presented, logger, testing });
        },
        flags.logLevel,
      );
    });
}

/** `testing`: only the test-only entry runtime/testing/test-server.ts passes it (ServerTestHooks). */
export function workerCommand(testing: ServerTestHooks = {}): Command {
  return serverCommand('worker', 'run a worker that registers with the master')
    .argument(
      '[master-url]',
      'the master, svc://host:port, or every master of a group, svc://h1:p1,h2:p2,h3:p3 (default: every ' +
        'entry of svc.master.endpoints)',
    )
    .addHelpText(
      'after',
      '\nPorts: svc.worker.rpc.port, .push.port, .fetch.port, .replicate.port (0 takes a free one); the worker\n' +
        'prints one JSON line with "event":"listening", its node id and bound ports. Tiers: svc.worker.storage.dirs\n' +
        '(local disks), svc.storage.hdfs.dir (a DFS directory: an NFS, CephFS or HDFS fuse mount) and the memory\n' +
        'tier (svc.worker.memory.size x svc.worker.directMemoryRatioForMemoryFileStorage). SIGTERM runs the\n' +
        "worker's configured exit (graceful when svc.worker.graceful.shutdown.enabled); a second signal exits now.\n" +
        'Management interface and metrics: svc.worker.http.host, svc.worker.http.port; authentication\n' +
        'svc.worker.http.auth.*; TLS svc.ssl.*. Every key: npx svc conf show --role worker, docs/configuration.md.',
    )
    .action(async (masterUrl: string | undefined, flags: ServerFlags) => {
      await serve(
        'worker',
        async () => {
          const { conf, presented } = serverConfigs('worker', flags);
          const url = masterEndpoints(conf, masterUrl, presented.release);
          if (!url.ok) throw new ServerConfigError(url.message);
          const logger = createLogger(flags.logLevel, { role: 'worker' });
          logConfigWarnings(logger, conf);
          return runWorker({
            conf,
            presented,
            masters: url.masters,
            logger,
            testing,
          });
        },
        flags.logLevel,
      );
    });
}
