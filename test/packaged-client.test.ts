// An application outside the repository links the client the way docs/client.md says: it installs the packed
// project and imports `svc/client` from plain Node.js (no tsx, no TypeScript). The packed project is made by
// `npm pack` (its prepack script compiles the client to dist/), then the documented word count
// (examples/word-count.mjs) runs from a temporary application against a local cluster, and its output is checked.
//
// Installing without the network: the tarball is extracted into the application's node_modules/svc, as npm would,
// but its dependencies are not downloaded: node_modules/svc/node_modules is a symlink to this repository's
// node_modules (the same versions package-lock.json pins). Everything else (the tarball's contents, the `exports`
// map, the compiled JavaScript, the bin) is what a registry install gives.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import { ServerProcess, STARTUP_WAIT_MS } from '../runtime/cluster/server-process.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The environment of the application's processes: no tsx loader inherited from this test run. */
function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** What the word count must print for `text`: counted here independently of the library. */
function expectedCounts(text: string): string[] {
  const counts = new Map<string, number>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([word, count]) => `${word}\t${count}`);
}

describe('the packed client in an application outside the repository', () => {
  let cluster: LocalCluster | undefined;
  let workDir: string | undefined;
  let appDir = '';

  before(async () => {
    workDir = mkdtempSync(path.join(tmpdir(), 'svc-packed-app-'));
    appDir = path.join(workDir, 'app');
    const packDir = path.join(workDir, 'pack');
    mkdirSync(packDir);
    // The cluster starts while npm packs (and builds) the project.
    const [started, packed] = await Promise.all([
      LocalCluster.start({ workers: 2 }),
      run(NPM, ['pack', '--json', '--pack-destination', packDir], { cwd: ROOT, env: plainEnv() }),
    ]);
    cluster = started;
    const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [
      { filename: string },
    ];
    const installed = path.join(appDir, 'node_modules', 'svc');
    mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', path.join(packDir, filename), '-C', installed, '--strip-components=1']);
    // The repository's packages, each linked, less tsx: an installed package must run without it.
    const modules = path.join(installed, 'node_modules');
    mkdirSync(modules);
    for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (name === 'tsx' || name === '.bin' || name.startsWith('.package-lock')) continue;
      symlinkSync(realpathSync(path.join(ROOT, 'node_modules', name)), path.join(modules, name), 'dir');
    }
    writeFileSync(
      path.join(appDir, 'package.json'),
      JSON.stringify({
        name: 'word-count-app',
        private: true,
        type: 'module',
        dependencies: { svc: '0.6.0' },
      }),
    );
    cpSync(path.join(ROOT, 'examples', 'word-count.mjs'), path.join(appDir, 'word-count.mjs'));
  });

  after(async () => {
    await cluster?.stop();
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
  });

  it('runs the documented word count with plain node, printing only its result on stdout', async () => {
    const text =
      'the quick brown fox jumps over the lazy dog\nThe dog sleeps; the fox runs\nÉté, été, ÉTÉ\n\nfin';
    writeFileSync(path.join(appDir, 'input.txt'), text);
    const { stdout, stderr } = await run(
      process.execPath,
      ['word-count.mjs', cluster!.masterUrl, 'input.txt'],
      { cwd: appDir, env: plainEnv() },
    );
    assert.deepEqual(stdout.trimEnd().split('\n'), expectedCounts(text), `stderr:\n${stderr}`);
  });

  it('resolves `svc/client` to compiled JavaScript, and nothing outside the exports map', async () => {
    const script = [
      "const client = await import('svc/client');",
      "console.log(import.meta.resolve('svc/client'));",
      'console.log(Object.keys(client).sort().join(","));',
      "await import('svc/runtime/client/application.ts').then(() => console.log('deep import allowed'), (e) => console.log(e.code));",
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: appDir,
      env: plainEnv(),
    });
    const [resolved, names, deep] = stdout.trimEnd().split('\n');
    assert.match(resolved ?? '', /node_modules\/svc\/dist\/runtime\/client\/index\.js$/);
    for (const name of [
      'startApplication',
      'connectExecutor',
      'hashPartitioner',
      'keyValue',
      'ReduceTaskFailedError',
    ]) {
      assert.ok(names?.split(',').includes(name), `svc/client exports ${name}: ${names}`);
    }
    assert.equal(deep, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('keeps the svc command working from the installed package', async () => {
    const { stdout } = await run(
      process.execPath,
      [path.join(appDir, 'node_modules', 'svc', 'bin', 'svc.mjs'), '--help'],
      { cwd: appDir, env: plainEnv() },
    );
    assert.match(stdout, /master/);
    assert.match(stdout, /worker/);
    // The conformance suite ships too: an operator checks a deployment with the installed command.
    const conformance = await run(
      process.execPath,
      [path.join(appDir, 'node_modules', 'svc', 'bin', 'svc.mjs'), 'conformance', '--help'],
      { cwd: appDir, env: plainEnv() },
    );
    assert.match(conformance.stdout, /--master/);
  });

  it('runs a master from the installed package, compiled, without tsx', async () => {
    const bin = path.join(appDir, 'node_modules', 'svc', 'bin', 'svc.mjs');
    assert.throws(
      () => createRequire(bin).resolve('tsx'),
      { code: 'MODULE_NOT_FOUND' },
      'the installed package cannot reach tsx',
    );
    const master = new ServerProcess({
      name: 'installed-master',
      command: [process.execPath, bin],
      args: [
        'master',
        '--conf',
        'svc.master.port=0',
        '--conf',
        'svc.master.http.port=0',
        '--conf',
        `svc.master.state.dir=${path.join(workDir!, 'master-state')}`,
      ],
      logFile: path.join(workDir!, 'installed-master.log'),
      env: plainEnv() as Record<string, string>,
    });
    try {
      const listening = await master.waitForEvent('listening', STARTUP_WAIT_MS);
      assert.ok((listening.rpc as { port: number }).port > 0, 'the master listens');
      // It ran the package's compiled JavaScript: tsx, which could run the TypeScript, is not installed here.
      const { stdout } = await run(process.execPath, [bin, '--help'], { cwd: appDir, env: plainEnv() });
      assert.match(stdout, new RegExp(`Documentation: ${path.join(appDir, 'node_modules', 'svc', 'docs')}`));
    } finally {
      await master.stop();
    }
  });
});
