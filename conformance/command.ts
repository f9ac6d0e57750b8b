// `svc conformance`: checks a running deployment against the contract, rule by rule (conformance/, docs/conformance.md).
import { svcServerCommand } from '../runtime/cluster/server-process.ts';
import { Command, InvalidArgumentError } from 'commander';
import { normalRelease } from './expectations/releases.ts';
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

/** This package's own `svc`, the default launcher of the servers the suite starts itself. */
function ownServerCommand(): string[] {
  return svcServerCommand();
}

interface Flags {
  readonly release: string;
  readonly master: string;
  readonly worker: string[];
  readonly data?: string;
  readonly auth?: { user: string; password: string };
  readonly json?: string;
  readonly junit?: string;
  readonly serverCommand?: string;
  readonly startServers: boolean;
  readonly metricsPath?: string;
}

export function conformanceCommand(): Command {
  return new Command('conformance')
    .description('check a running deployment against the interface and upgrade contract, rule by rule')
    .requiredOption('--release <x.y.z>', 'the release the deployment presents', release)
    .requiredOption('--master <url>', "the master's management address, http://HOST:PORT")
    .option('--worker <url>', "a worker's management address (repeatable)", collect, [])
    .option(
      '--data <url>',
      "the master's client address, svc://HOST:PORT (rules that start a worker of their own)",
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
        '"master"/"worker" and --conf settings are appended). Default: this package\'s svc',
    )
    .option('--no-start-servers', 'start no servers: those rules are reported not applicable')
    .option('--metrics-path <path>', 'where the nodes serve Prometheus text (default /metrics/prometheus)')
    .addHelpText(
      'after',
      '\nOne row per contract rule: pass, fail or not applicable, with the evidence. Exit status 1 on any failure.\n' +
        'The suite excludes, decommissions and stops only workers it started itself. docs/conformance.md.',
    )
    .action(async (flags: Flags) => {
      const serverCommand = !flags.startServers
        ? undefined
        : flags.serverCommand === undefined
          ? ownServerCommand()
          : flags.serverCommand.split(' ').filter((part) => part.length > 0);
      const target = {
        release: flags.release,
        masterUrl: flags.master,
        workerUrls: flags.worker,
        ...(flags.data === undefined ? {} : { dataUrl: flags.data }),
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
