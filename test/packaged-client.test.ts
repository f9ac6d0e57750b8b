// An application outside the repository links the client the way docs/client.md says: it installs the packed client
// package and imports `@svc-shuffle/client` from plain Node.js (no tsx, no TypeScript). The packages are made by
// `npm pack -w packages/client -w packages/server` (each one's prepack compiles it, scripts/build.mjs), then the
// documented word count (examples/word-count.mjs) runs from a temporary application against a local cluster, and its
// output is checked; the installed server package's `svc` starts a master without tsx.
//
// Installing without the network: each tarball is extracted into the application's node_modules/@svc-shuffle/, as
// npm would, but dependencies are not downloaded: the application's node_modules links this repository's packages
// (the versions package-lock.json pins), less tsx and TypeScript. Everything else (the tarballs' contents, the
// `exports` maps, the compiled JavaScript, the bin) is what a registry install gives; scripts/install-check.mjs
// installs from the registry.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
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
    // The cluster starts while npm packs (and builds) the packages.
    const [started, packed] = await Promise.all([
      LocalCluster.start({ workers: 2 }),
      run(
        NPM,
        ['pack', '--json', '--pack-destination', packDir, '-w', 'packages/client', '-w', 'packages/server'],
        { cwd: ROOT, env: plainEnv(), maxBuffer: 64 * 2 ** 20 },
      ),
    ]);
    cluster = started;
    const tarballs = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
      name: string;
      filename: string;
    }[];
    const modules = path.join(appDir, 'node_modules');
    for (const { name, filename } of tarballs) {
      const installed = path.join(modules, name);
      mkdirSync(installed, { recursive: true });
      await run('tar', ['-xzf', path.join(packDir, filename), '-C', installed, '--strip-components=1']);
    }
    // The repository's packages, each linked, less tsx and TypeScript: an installed package runs without them.
    for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
      if (['tsx', 'typescript', '.bin', '@svc-shuffle'].includes(name) || name.startsWith('.package-lock'))
        continue;
      symlinkSync(realpathSync(path.join(ROOT, 'node_modules', name)), path.join(modules, name), 'dir');
    }
    writeFileSync(
      path.join(appDir, 'package.json'),
      JSON.stringify({
        name: 'word-count-app',
        private: true,
        type: 'module',
        dependencies: { '@svc-shuffle/client': '0.6.0', '@svc-shuffle/server': '0.6.0' },
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

  it('resolves `@svc-shuffle/client` to compiled JavaScript, and nothing outside the exports map', async () => {
    const script = [
      "const client = await import('@svc-shuffle/client');",
      "console.log(import.meta.resolve('@svc-shuffle/client'));",
      'console.log(Object.keys(client).sort().join(","));',
      "await import('@svc-shuffle/client/dist/runtime/client/application.js').then(() => console.log('deep import allowed'), (e) => console.log(e.code));",
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: appDir,
      env: plainEnv(),
    });
    const [resolved, names, deep] = stdout.trimEnd().split('\n');
    assert.match(resolved ?? '', /node_modules\/@svc-shuffle\/client\/dist\/runtime\/client\/index\.js$/);
    for (const name of [
      'startApplication',
      'connectExecutor',
      'hashPartitioner',
      'keyValue',
      'ReduceTaskFailedError',
    ]) {
      assert.ok(names?.split(',').includes(name), `@svc-shuffle/client exports ${name}: ${names}`);
    }
    assert.equal(deep, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('installs the client without the servers', () => {
    const manifest = JSON.parse(
      readFileSync(path.join(appDir, 'node_modules', '@svc-shuffle', 'client', 'package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    assert.deepEqual(Object.keys(manifest.dependencies).sort(), ['@bufbuild/protobuf', 'pino']);
  });

  it('runs a master from the installed package, compiled, without tsx', async () => {
    const bin = path.join(appDir, 'node_modules', '@svc-shuffle', 'server', 'dist', 'bin', 'svc.js');
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
      assert.match(stdout, /master/);
      assert.match(
        stdout,
        new RegExp(`Documentation: ${path.join(appDir, 'node_modules', '@svc-shuffle', 'server', 'docs')}`),
      );
    } finally {
      await master.stop();
    }
  });
});
