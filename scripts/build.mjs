#!/usr/bin/env node
// `npm run build [client|server|conformance …]`: compiles what each published package ships into its folder under
// packages/ (packages/README.md): the sources stay where they are, each package's tsconfig.build.json names its
// entry points, and the JavaScript lands in packages/<name>/dist/. Beside it go the files the package reads or ships
// (the OpenAPI documents; the server's docs, scripts, templates and deployment files; LICENSE and NOTICE). Then the
// compiled imports are checked against the package's dependencies, so that a package never needs what it does not
// declare and declares nothing it does not use, at the development package's version ranges.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const rootManifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const notTests = (source) => !/\.test\.ts$|\/testing(\/|$)|\/fixtures(\/|$)/.test(source);

/** What each package needs besides its compiled entry points. */
const PACKAGES = {
  client: { entries: ['runtime/client/index.js'] },
  server: {
    // The RocksDB store's thread is loaded by its path (runtime/storage/rocksdb-threaded.ts), not imported.
    entries: ['runtime/cli/main.js', 'runtime/demo/executor.js', 'runtime/storage/rocksdb-thread.js'],
    assets: ['runtime/http/openapi'],
    // Operators' files and the documentation `svc --help` points at, at the package's top level as in the repository.
    shipped: ['docs', 'sbin', 'etc', 'deploy'],
    // The installed `svc` (package.json `bin`, and what sbin/ runs).
    bin: { file: 'dist/bin/svc.js', imports: '../runtime/cli/main.js' },
  },
  conformance: {
    entries: ['conformance/cli.js'],
    // The suite runs applications through the published client, a dependency, rather than a copy of its own.
    external: { 'runtime/client/index.js': '@svc-shuffle/client' },
    keep: 'conformance',
  },
};

function jsFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

const SPECIFIER =
  /(?:^\s*(?:import|export)\b[^'"]*?\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*)(['"])([^'"\n]+)\1/gm;
/** `createRequire(import.meta.url)('name')`: a package loaded when present (the SIMD CRC-32). */
const REQUIRED = /createRequire\([^)]*\)\(\s*(['"])([^'"]+)\1\s*\)/g;

function specifiers(file) {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(SPECIFIER), ...text.matchAll(REQUIRED)].map((match) => match[2]);
}

/**
 * Deletes the JavaScript no entry reaches: modules the compiler emitted only because a type was imported from them
 * (their declarations stay, for the types). What a package installs is then what runs.
 */
function prune(dist, entries) {
  const reached = new Set();
  const pending = entries.map((entry) => path.join(dist, entry));
  while (pending.length > 0) {
    const file = pending.pop();
    if (reached.has(file) || !existsSync(file)) continue;
    reached.add(file);
    for (const specifier of specifiers(file)) {
      if (specifier.startsWith('.')) pending.push(path.resolve(path.dirname(file), specifier));
    }
  }
  for (const file of jsFiles(dist)) if (!reached.has(file)) rmSync(file);
}

/** Replaces relative imports of `external`'s files (paths under dist/) by the package that provides them. */
function rewriteExternal(dist, external) {
  for (const file of jsFiles(dist)) {
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(SPECIFIER, (whole, quote, specifier) => {
      if (!specifier.startsWith('.')) return whole;
      const target = path.relative(dist, path.resolve(path.dirname(file), specifier));
      const replacement = external[target.split(path.sep).join('/')];
      return replacement === undefined ? whole : whole.replace(specifier, replacement);
    });
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}

/** The packages the compiled files import; throws on a relative import that leaves dist/ or names a missing file. */
function importedPackages(dist) {
  const builtins = new Set(builtinModules);
  const used = new Set();
  const declarations = readdirSync(dist, { recursive: true })
    .filter((name) => name.endsWith('.d.ts'))
    .map((name) => path.join(dist, name));
  for (const file of [...jsFiles(dist), ...declarations]) {
    for (const specifier of specifiers(file)) {
      if (specifier.startsWith('.')) {
        const target = path.resolve(path.dirname(file), specifier);
        const typed = file.endsWith('.d.ts') ? target.replace(/\.[jt]s$/, '.d.ts') : target;
        if (!target.startsWith(dist + path.sep) || !existsSync(typed)) {
          throw new Error(
            `${path.relative(root, file)} imports ${specifier}, which the package does not hold`,
          );
        }
      } else if (!specifier.startsWith('node:') && !builtins.has(specifier)) {
        const parts = specifier.split('/');
        used.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
      }
    }
  }
  return used;
}

/** Throws unless the manifest's dependencies are exactly what the code imports, at the development package's ranges. */
function checkDependencies(name, manifest, used) {
  const optional = Object.keys(manifest.peerDependenciesMeta ?? {});
  const declared = manifest.dependencies ?? {};
  const problems = [];
  for (const dependency of used) {
    if (!(dependency in declared) && !optional.includes(dependency)) {
      problems.push(`imports ${dependency}, which is not a dependency`);
    }
  }
  for (const [dependency, range] of Object.entries(declared)) {
    if (!used.has(dependency)) problems.push(`declares ${dependency}, which nothing imports`);
    const wanted = dependency.startsWith('@svc-shuffle/')
      ? manifest.version
      : rootManifest.dependencies[dependency];
    if (range !== wanted) problems.push(`${dependency}@${range}: the development package has ${wanted}`);
  }
  if (manifest.version !== rootManifest.version) {
    problems.push(`version ${manifest.version}, the development package's is ${rootManifest.version}`);
  }
  if (problems.length > 0) throw new Error(`packages/${name}/package.json: ${problems.join('; ')}`);
}

function build(name) {
  const spec = PACKAGES[name];
  if (spec === undefined) throw new Error(`no package ${name}: ${Object.keys(PACKAGES).join(', ')}`);
  const home = path.join(root, 'packages', name);
  const dist = path.join(home, 'dist');
  const manifest = JSON.parse(readFileSync(path.join(home, 'package.json'), 'utf8'));
  rmSync(dist, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', path.join(home, 'tsconfig.build.json')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (spec.external !== undefined) rewriteExternal(dist, spec.external);
  prune(dist, [...spec.entries, ...(spec.bin === undefined ? [] : [path.relative('dist', spec.bin.file)])]);
  if (spec.keep !== undefined) {
    for (const entry of readdirSync(dist)) {
      if (entry !== spec.keep) rmSync(path.join(dist, entry), { recursive: true });
    }
  }
  for (const asset of spec.assets ?? []) {
    cpSync(path.join(root, asset), path.join(dist, asset), { recursive: true, filter: notTests });
  }
  for (const folder of spec.shipped ?? []) {
    rmSync(path.join(home, folder), { recursive: true, force: true });
    cpSync(path.join(root, folder), path.join(home, folder), { recursive: true, filter: notTests });
  }
  if (spec.bin !== undefined) {
    const bin = path.join(home, spec.bin.file);
    mkdirSync(path.dirname(bin), { recursive: true });
    writeFileSync(bin, `#!/usr/bin/env node\nimport '${spec.bin.imports}';\n`);
    chmodSync(bin, 0o755);
  }
  for (const file of ['LICENSE', 'NOTICE']) cpSync(path.join(root, file), path.join(home, file));
  checkDependencies(name, manifest, importedPackages(dist));
  // npm links a binary as it is: without its interpreter line a shell would run the JavaScript.
  for (const [command, file] of Object.entries(manifest.bin ?? {})) {
    const target = path.join(home, file);
    if (!existsSync(target) || !readFileSync(target, 'utf8').startsWith('#!/usr/bin/env node\n')) {
      throw new Error(
        `packages/${name}: the binary ${command} (${file}) is missing or has no #!/usr/bin/env node`,
      );
    }
  }
  console.log(`built ${manifest.name} in ${path.relative(process.cwd(), home) || '.'}/`);
}

const names = process.argv.slice(2);
for (const name of names.length > 0 ? names : Object.keys(PACKAGES)) build(name);
