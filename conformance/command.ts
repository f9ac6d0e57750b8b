// The conformance command: checks a running deployment against the contract, rule by rule (conformance/,
// docs/conformance.md). The same command is `svc conformance` in the source tree and the conformance package's own
// program (cli.ts); each says how it starts servers of the suite's own when no --server-command is given.
import { Command, InvalidArgumentError } from 'commander';
import { CONTRACT_RELEASES, normalRelease } from './expectations/releases.ts';
import { report } from './report/output.ts';
import { runChecks } from './runner.ts';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function credentials(text: string): { user: string; password: string } {
  const at = text.indexOf(':');
  if (at <= 0) throw new InvalidArgumentError('expected user:password');
  return { user: text.slice(0, at), password: text.slice(at + 1) };
}

function release(text: string): string {
  try {
    return normalRelease(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** The newest release the suite knows: what it checks when --release is not given. */
const NEWEST_RELEASE = CONTRACT_RELEASES[CONTRACT_RELEASES.length - 1];

/** `svc.master.http.port`'s default: the management port assumed when only the client address is given. */
const DEFAULT_MASTER_HTTP_PORT = 9098;

/**
 * The master's two addresses from --master (repeatable) and --data: an http(s) URL is its management address, an
 * svc:// or rss:// URL its client address. Given only the client address, the management port is the default one.
 */
export function masterAddresses(
  given: readonly string[],
  data: string | undefined,
): { readonly masterUrl: string; readonly dataUrl?: string } {
  const management = given.filter((url) => /^https?:\/\//.test(url));
  const client = [
    ...given.filter((url) => /^(svc|rss):\/\//.test(url)),
    ...(data === undefined ? [] : [data]),
  ];
  const other = given.find((url) => !management.includes(url) && !client.includes(url));
  if (other !== undefined) {
    throw new RangeError(`--master ${other}: expected http://HOST:PORT or svc://HOST:PORT`);
  }
  if (management.length > 1 || client.length > 1) {
    throw new RangeError('one master: give its management and its client address at most once each');
  }
  const dataUrl = client[0];
  const masterUrl =
    management[0] ??
    (dataUrl === undefined
      ? undefined
      : `http://${new URL(dataUrl.replace(/^(svc|rss):/, 'http:')).hostname}:${DEFAULT_MASTER_HTTP_PORT}`);
  if (masterUrl === undefined) throw new RangeError('--master is required');
  return dataUrl === undefined ? { masterUrl } : { masterUrl, dataUrl };
}

interface Flags {
  readonly release: string;
  readonly master: string[];
  readonly worker: string[];
  readonly data?: string;
  readonly auth?: { user: string; password: string };
  readonly json?: string;
  readonly junit?: string;
  readonly serverCommand?: string;
  readonly startServers: boolean;
  readonly metricsPath?: string;
}

export interface ConformanceCommandOptions {
  /** The command's name: `conformance` under `svc`, the package's binary name on its own. */
  readonly name: string;
  /** How servers of the suite's own start when --server-command is not given; undefined: no default. */
  readonly defaultServerCommand: () => string[] | undefined;
  /** Said when there is no default and no --server-command. */
  readonly noServerCommand?: string;
}

export function conformanceCommand(options: ConformanceCommandOptions): Command {
  return new Command(options.name)
    .description('check a running deployment against the interface and upgrade contract, rule by rule')
    .option('--release <x.y.z>', 'the release the deployment presents', release, NEWEST_RELEASE)
    .option(
      '--master <url>',
      'the master: its client address svc://HOST:PORT, its management address http://HOST:PORT, or both ' +
        `(repeat the flag; given only svc://, the management port is ${DEFAULT_MASTER_HTTP_PORT})`,
      collect,
      [],
    )
    .option('--worker <url>', "a worker's management address (repeatable)", collect, [])
    .option(
      '--data <url>',
      "the master's client address, svc://HOST:PORT (the same as --master svc://HOST:PORT)",
    )
    .option(
      '--auth <user:password>',
      'basic credentials of an administrator, when authentication is on',
      credentials,
    )
    .option('--json <file>', 'write the rows as JSON')
    .option('--junit <file>', 'write the rows as JUnit XML')
    .option(
      '--server-command <command>',
      'how to start servers of the implementation for the rules that need their own (space-separated; ' +
        '"master"/"worker" and --conf settings are appended). Default: the svc of this installation',
    )
    .option('--no-start-servers', 'start no servers: those rules are reported not applicable')
    .option('--metrics-path <path>', 'where the nodes serve Prometheus text (default /metrics/prometheus)')
    .addHelpText(
      'after',
      '\nOne row per contract rule: pass, fail or not applicable, with the evidence. Exit status 1 on any failure.\n' +
        'The suite excludes, decommissions and stops only workers it started itself. docs/conformance.md.',
    )
    .action(async (flags: Flags, command: Command) => {
      let master: ReturnType<typeof masterAddresses>;
      try {
        master = masterAddresses(flags.master, flags.data);
      } catch (error) {
        command.error(`error: ${(error as Error).message}`);
      }
      const serverCommand = !flags.startServers
        ? undefined
        : flags.serverCommand === undefined
          ? options.defaultServerCommand()
          : flags.serverCommand.split(' ').filter((part) => part.length > 0);
      if (flags.startServers && serverCommand === undefined && options.noServerCommand !== undefined) {
        process.stderr.write(`${options.noServerCommand}\n`);
      }
      const target = {
        release: flags.release,
        ...master,
        workerUrls: flags.worker,
        ...(flags.auth === undefined ? {} : { auth: flags.auth }),
        ...(serverCommand === undefined ? {} : { serverCommand }),
        ...(flags.metricsPath === undefined ? {} : { metricsPath: flags.metricsPath }),
      };
      const rows = await runChecks(target);
      process.exitCode = report(rows, {
        ...(flags.json === undefined ? {} : { json: flags.json }),
        ...(flags.junit === undefined ? {} : { junit: flags.junit }),
      });
    });
}
