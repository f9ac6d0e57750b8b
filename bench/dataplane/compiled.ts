/**
 * The build the dataplane benchmark measures: svc as it is deployed, compiled JavaScript (issue 37: "measure on the
 * packages and the compiled servers"), not the TypeScript source through tsx. tsx keeps its compiler and a loader
 * thread resident in every process it runs (a worker at idle: 161 MiB through tsx, 109 MiB compiled,
 * docs/operations.md), which a client's peak RSS (map-memory, read-memory) would count as svc's own.
 *
 * TypeScript's compiler emits the benchmark's child processes (client, bare sink) and svc's command line, with the
 * server package's settings (tsconfig.build.json), into node_modules/.cache, where the compiled files find the
 * repository's packages as the source does. Each run compiles afresh (a few seconds), so that what runs is always
 * this tree; `--tsx` runs everything from the source instead.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** How to start each kind of process: the arguments after `node` (and its `--import` of the probe). */
export interface ChildEntries {
  readonly client: readonly string[];
  readonly sink: readonly string[];
  /** The servers' command line (LocalClusterOptions.serverCommand); undefined: this copy's own (tsx). */
  readonly server?: readonly string[];
  /** `svc` itself (`svc demo …`): the compiled command line, or the source's through tsx. */
  readonly cli: readonly string[];
  /** `compiled (<dir>)` or `through tsx`, for the run's header. */
  readonly describe: string;
}

const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** Where the build goes, under the repository: `<this>/<tree>/` holds the compiled tree (see compiledEntries). */
export const COMPILED_DIR = 'node_modules/.cache/svc-bench-dataplane';

/** The source file a compiled one of the build came from (`runtime/x.js` to `runtime/x.ts`), else undefined. */
export function sourceOfCompiled(file: string): string | undefined {
  const at = file.indexOf(`${COMPILED_DIR}/`);
  if (at < 0) return undefined;
  const inTree = file.slice(at + COMPILED_DIR.length + 1);
  return inTree.slice(inTree.indexOf('/') + 1).replace(/\.js$/, '.ts');
}
const SOURCES = {
  client: 'bench/dataplane/client',
  sink: 'bench/dataplane/sink',
  server: 'runtime/cli/main',
  // The demo's executors, which `svc demo` starts as it runs itself (runtime/own-entry.ts).
  executor: 'runtime/demo/executor',
};

export function sourceEntries(): ChildEntries {
  return {
    client: ['--import', 'tsx', path.join(ROOT, `${SOURCES.client}.ts`)],
    sink: ['--import', 'tsx', path.join(ROOT, `${SOURCES.sink}.ts`)],
    cli: [process.execPath, '--import', 'tsx', path.join(ROOT, `${SOURCES.server}.ts`)],
    describe: 'through tsx',
  };
}

/** Compiles the children and the servers; throws with the compiler's output if it emitted nothing usable. */
export function compiledEntries(): ChildEntries {
  // One directory per tree: bench/compare-trees.ts runs another tree whose node_modules is this one's.
  const tree = createHash('sha256').update(ROOT).digest('hex').slice(0, 12);
  const out = path.join(ROOT, COMPILED_DIR, tree);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  // The configuration sits in the output directory so that its type roots resolve from the repository.
  const config = path.join(out, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: path.join(ROOT, 'tsconfig.build.json'),
      compilerOptions: { rootDir: ROOT, outDir: out, noCheck: true, declaration: false },
      files: [
        ...Object.values(SOURCES).map((source) => path.join(ROOT, `${source}.ts`)),
        // Loaded by its path, not imported (runtime/storage/rocksdb-threaded.ts); its typings for the compiler.
        path.join(ROOT, 'runtime/storage/rocksdb-thread.ts'),
        path.join(ROOT, 'runtime/storage/nxtedition-rocksdb.d.ts'),
      ],
    }),
  );
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', config], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString('utf8') ?? String(error);
    throw new Error(`compiling the benchmark's processes failed (--tsx runs the source):\n${output}`, {
      cause: error,
    });
  }
  // What the servers read beside their code, as the server package ships it (scripts/build.mjs).
  cpSync(path.join(ROOT, 'runtime/http/openapi'), path.join(out, 'runtime/http/openapi'), {
    recursive: true,
  });
  return {
    client: [path.join(out, `${SOURCES.client}.js`)],
    sink: [path.join(out, `${SOURCES.sink}.js`)],
    server: [process.execPath, path.join(out, `${SOURCES.server}.js`)],
    cli: [process.execPath, path.join(out, `${SOURCES.server}.js`)],
    describe: `compiled (${path.relative(ROOT, out)})`,
  };
}
