// `npm run conformance`: starts a local cluster per release (child processes on loopback, ports from 0, each
// presenting the release with --release), checks each with the whole suite, and reports. This launcher is the one
// part of conformance/ that imports runtime/ (to start the clusters); the checks speak only HTTP and the servers'
// command line.
//   npm run conformance                       the standard matrix, 0.2.0 to 0.6.0, one release per minor
//   npm run conformance -- --reduced          CI's reduced matrix
//   npm run conformance -- --full             every release of the contract
//   npm run conformance -- --release 0.5.1    one release
//   --json FILE, --junit FILE                 the reports for CI systems
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { svcServerCommand } from '../runtime/cluster/server-process.ts';
import { Command } from 'commander';
import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import {
  CONTRACT_RELEASES,
  REDUCED_MATRIX,
  STANDARD_MATRIX,
  atLeast,
  normalRelease,
} from './expectations/releases.ts';
import type { RuleRow, Target } from './report/row.ts';
import { report } from './report/output.ts';
import { runChecks } from './runner.ts';

const SERVER_COMMAND = svcServerCommand();

/** HTTP authentication (from 0.6.0, the release it arrived in) on every node, with a fresh administrator. */
function httpAuth(password: string): string[] {
  return ['master', 'worker'].flatMap((role) => [
    `svc.${role}.http.auth.supportedSchemes=BASIC`,
    `svc.${role}.http.auth.basic.users=conformance:${password}`,
    `svc.${role}.http.auth.administers=conformance`,
  ]);
}

/** Dynamic configuration (a file store of one SYSTEM level), so that its endpoints answer with a body. */
function dynamicConfig(dir: string): string[] {
  const file = path.join(dir, 'dynamic.yaml');
  writeFileSync(file, '- level: SYSTEM\n  config:\n    svc.quota.user.diskBytesWritten: 10g\n');
  return ['svc.dynamicConfig.store.backend=FS', `svc.dynamicConfig.store.fs.path=${file}`];
}

async function checkRelease(release: string): Promise<RuleRow[]> {
  const auth = atLeast(release, '0.6.0')
    ? { user: 'conformance', password: randomBytes(12).toString('base64url') }
    : undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-conformance-dynamic-'));
  const cluster = await LocalCluster.start({
    workers: 1,
    release,
    conf: [...dynamicConfig(dir), ...(auth === undefined ? [] : httpAuth(auth.password))],
  }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  try {
    const target: Target = {
      release,
      masterUrl: cluster.masterHttpUrl,
      workerUrls: [cluster.workerHttpUrl(0)],
      dataUrl: cluster.masterUrl,
      serverCommand: SERVER_COMMAND,
      ...(auth === undefined ? {} : { auth }),
    };
    return await runChecks(target);
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const program = new Command('conformance')
  .option('--reduced', `CI's reduced matrix (${REDUCED_MATRIX.join(', ')})`)
  .option('--full', `every release of the contract (${CONTRACT_RELEASES.join(', ')})`)
  .option('--release <x.y.z...>', 'only these releases')
  .option('--json <file>', 'write the rows as JSON')
  .option('--junit <file>', 'write the rows as JUnit XML')
  .parse(process.argv);
const flags = program.opts<{
  reduced?: boolean;
  full?: boolean;
  release?: string[];
  json?: string;
  junit?: string;
}>();

const [name, releases]: [string, readonly string[]] =
  flags.release !== undefined
    ? ['chosen releases', flags.release.map(normalRelease)]
    : flags.full === true
      ? ['full matrix', CONTRACT_RELEASES]
      : flags.reduced === true
        ? [
            'reduced matrix (CI; the standard one: npm run conformance, every release: --full)',
            REDUCED_MATRIX,
          ]
        : ['standard matrix (one release per minor; every release: --full)', STANDARD_MATRIX];

const rows: RuleRow[] = [];
for (const release of releases) {
  process.stderr.write(`conformance: checking a local cluster presenting ${release}\n`);
  rows.push(...(await checkRelease(release)));
}
process.exitCode = report(rows, {
  matrix: `matrix: ${name}: ${releases.join(', ')}`,
  evidenceWidth: 160,
  ...(flags.json === undefined ? {} : { json: flags.json }),
  ...(flags.junit === undefined ? {} : { junit: flags.junit }),
});
