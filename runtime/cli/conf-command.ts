// `svc conf`: check, migrate, show and document configuration. The files and the environment are read here; every
// decision is conf/'s.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import {
  checkConfigText,
  formatMigrationReport,
  formatProblem,
  migrateConfigText,
  renderConfigurationDocs,
  resolveConfig,
  ROLES,
  type Origin,
  type ResolvedConfig,
  type Role,
} from '../../conf/index.ts';
import { CURRENT_RELEASE, parseRelease, type Release } from '../../core/release/version.ts';
import { localPlatform } from '../platform.ts';
import { installedDocs } from './docs-location.ts';

const DOCS_PATH = path.join(installedDocs() ?? 'docs', 'configuration.md');

function readText(path: string): string {
  if (!existsSync(path)) throw new CliFailure(`${path}: no such file`);
  return readFileSync(path, 'utf8');
}

/** A failure to report on stderr with exit code 2 (the command could not do its job). */
class CliFailure extends Error {}

function release(text: string): Release {
  try {
    return parseRelease(text);
  } catch (error) {
    throw new CliFailure((error as Error).message);
  }
}

/** Runs an action, turning failures into a message and an exit code instead of a stack trace. */
function guarded<Args extends unknown[]>(action: (...args: Args) => number): (...args: Args) => void {
  return (...args: Args) => {
    try {
      process.exitCode = action(...args);
    } catch (error) {
      if (!(error instanceof CliFailure || error instanceof RangeError)) throw error;
      console.error(`svc conf: ${error.message}`);
      process.exitCode = 2;
    }
  };
}

function check(file: string, options: { release: string }): number {
  const report = checkConfigText(readText(file), {
    release: release(options.release),
    fileName: file,
    env: process.env,
  });
  for (const line of report.lines) console.log(line);
  return report.errorCount > 0 ? 1 : 0;
}

function migrate(file: string, options: { from: string; to: string; write?: boolean }): number {
  const migrateOptions = {
    from: release(options.from),
    to: release(options.to),
    fileName: file,
    env: process.env,
  };
  const migration = migrateConfigText(readText(file), migrateOptions);
  const report = formatMigrationReport(migration, migrateOptions);
  if (options.write) {
    writeFileSync(file, migration.text);
    console.log([...report, '', `${file} written.`].join('\n'));
  } else {
    process.stdout.write(migration.text);
    console.error(report.join('\n'));
  }
  return migration.problems.some((problem) => problem.severity === 'error') ? 1 : 0;
}

function originText(origin: Origin): string {
  switch (origin.kind) {
    case 'default':
      return 'default';
    case 'platform':
      return 'default for this platform';
    case 'fallback':
      return `from ${origin.key}`;
    case 'legacy':
      return `from ${origin.keys.join(' and ')}`;
    case 'file':
      return origin.where.kind === 'file' ? `line ${origin.where.line}` : 'file';
    case 'env':
      return origin.where.kind === 'env' ? `environment ${origin.where.variable}` : 'environment';
    case 'override':
      return 'command line';
  }
}

/** `key = value   (origin)` lines of a configuration. */
function showLines(conf: ResolvedConfig, role: Role | undefined): string[] {
  const shown = conf.show(role);
  const width = Math.max(...shown.map((setting) => setting.key.length));
  return shown.map(
    (setting) => `${setting.key.padEnd(width)} = ${setting.value}   (${originText(setting.origin)})`,
  );
}

function parseOverrides(pairs: readonly string[]): Record<string, string> {
  const overrides: Record<string, string> = {};
  for (const pair of pairs) {
    const separator = pair.indexOf('=');
    if (separator <= 0) throw new CliFailure(`--conf ${pair}: expected key=value`);
    overrides[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  return overrides;
}

function show(file: string | undefined, options: { release: string; role?: Role; conf: string[] }): number {
  const conf = resolveConfig({
    release: release(options.release),
    ...(options.role === undefined ? {} : { role: options.role }),
    ...(file === undefined ? {} : { fileText: readText(file), fileName: file }),
    env: process.env,
    overrides: parseOverrides(options.conf),
    platform: localPlatform(),
  });
  for (const problem of conf.problems) console.error(formatProblem(problem));
  for (const line of showLines(conf, options.role)) console.log(line);
  return conf.errors.length > 0 ? 1 : 0;
}

function docs(options: { output: string; check?: boolean }): number {
  const text = renderConfigurationDocs();
  if (options.check) {
    const current = existsSync(options.output) ? readFileSync(options.output, 'utf8') : '';
    if (current === text) return 0;
    console.error(`${options.output} is stale; run npx svc conf docs to regenerate it`);
    return 1;
  }
  writeFileSync(options.output, text);
  console.log(`${options.output} written.`);
  return 0;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function confCommand(): Command {
  const conf = new Command('conf').description('check, migrate, show and document svc configuration');
  conf
    .command('check')
    .description(
      'list every problem of a properties file, and every key it sets that has no effect in svc, one per line; ' +
        'exit 1 when any problem is an error',
    )
    .argument('<file>', 'properties file (svc-defaults.conf)')
    .option('--release <release>', 'check as of this release', CURRENT_RELEASE)
    .action(guarded(check));
  conf
    .command('migrate')
    .description('upgrade a properties file from one release to another and report the defaults that change')
    .argument('<file>', 'properties file (svc-defaults.conf)')
    .requiredOption('--from <release>', 'the release the file was written for')
    .option('--to <release>', 'the release to upgrade to', CURRENT_RELEASE)
    .option(
      '--write',
      'rewrite the file in place (otherwise the upgraded file goes to stdout, the report to stderr)',
    )
    .action(guarded(migrate));
  conf
    .command('show')
    .description('print the resolved configuration: every value and where it came from')
    .argument('[file]', 'properties file (svc-defaults.conf)')
    .option('--release <release>', 'resolve as of this release', CURRENT_RELEASE)
    .addOption(new Option('--role <role>', 'only the keys of this role').choices(ROLES))
    .option('--conf <key=value>', 'override a key (repeatable)', collect, [])
    .action(guarded(show));
  conf
    .command('docs')
    .description('generate docs/configuration.md from the registry')
    .option('--output <path>', 'where to write', DOCS_PATH)
    .option('--check', 'only check that the file is current; exit 1 when it is stale')
    .action(guarded(docs));
  return conf;
}
