// The folder rules of docs/architecture.md as data: which folder may import which, what is test-only, what ships.
// tools/structure/check.mjs turns them into dependency-cruiser rules; docs/architecture.md and each folder's README
// say the same in words, and test/boundaries.test.ts keeps the two in step.

/** Top-level folders holding code; everything the structure check reads. */
export const topFolders = [
  'bench',
  'bin',
  'clients',
  'conf',
  'conformance',
  'core',
  'examples',
  'runtime',
  'scripts',
  'sim',
  'test',
  'tools',
];

/** Top-level folders whose subfolders are folders of their own in the rules (their loose files form one more). */
export const dividedFolders = ['runtime', 'sim'];

/** Subfolders with a rule of their own inside an undivided folder. */
export const namedSubfolders = ['core/interpreter'];

/**
 * What each folder's product code may import besides itself. An entry names a folder and everything under it
 * ('runtime' is every runtime folder; a divided folder's loose files are the folder named alone). Tests and test
 * helpers may import anything their top-level folder's product code may reach, plus test helpers.
 */
export const mayImport = {
  core: [],
  'core/interpreter': ['core'],
  conf: ['core'],
  clients: [],
  runtime: ['core', 'conf'],
  'runtime/wire': ['core', 'runtime:files'],
  'runtime/storage': ['core', 'runtime:files'],
  'runtime/metrics': ['core'],
  'runtime/driver': ['core', 'runtime:files', 'runtime/wire', 'runtime/storage'],
  'runtime/transport': ['core', 'conf', 'runtime:files', 'runtime/wire', 'runtime/driver'],
  'runtime/http': ['core', 'conf', 'clients', 'runtime:files', 'runtime/driver', 'runtime/metrics'],
  'runtime/process': [
    'core',
    'conf',
    'runtime:files',
    'runtime/wire',
    'runtime/storage',
    'runtime/metrics',
    'runtime/driver',
    'runtime/transport',
    'runtime/http',
    'runtime/ha',
  ],
  'runtime/client': ['core', 'conf', 'runtime:files', 'runtime/wire', 'runtime/driver', 'runtime/transport'],
  'runtime/cluster': ['core', 'conf', 'runtime:files', 'runtime/process', 'runtime/ha'],
  'runtime/ha': ['core', 'conf', 'runtime:files'],
  'runtime/demo': ['core', 'conf', 'runtime:files', 'runtime/driver', 'runtime/client', 'runtime/cluster'],
  'runtime/cli': [
    'core',
    'conf',
    'clients',
    'runtime:files',
    'runtime/transport',
    'runtime/http',
    'runtime/process',
    'runtime/cluster',
    'runtime/demo',
  ],
  'runtime/testing': [
    'core',
    'conf',
    'clients',
    'runtime:files',
    'runtime/wire',
    'runtime/storage',
    'runtime/metrics',
    'runtime/driver',
    'runtime/transport',
    'runtime/http',
    'runtime/process',
    'runtime/client',
    'runtime/cluster',
    'runtime/demo',
    'runtime/cli',
    'runtime/ha',
  ],
  'runtime/chaos': ['core', 'conf', 'runtime:files', 'runtime/client', 'runtime/cluster', 'runtime/testing'],
  sim: ['core', 'conf', 'sim'],
  'sim/world': ['core'],
  'sim/faults': ['core', 'sim/world'],
  'sim/workload': ['core', 'conf', 'sim/world', 'sim/faults'],
  'sim/invariants': ['core', 'sim/world', 'sim/faults', 'sim/workload'],
  'sim/cluster': ['core', 'conf', 'sim/world', 'sim/faults', 'sim/workload', 'sim/invariants', 'sim/ha'],
  'sim/ha': ['core', 'sim/world'],
  conformance: ['runtime/client', 'runtime/cluster', 'runtime/testing'],
  bench: ['core', 'conf', 'runtime', 'sim'],
  bin: ['runtime/cli', 'runtime/cluster', 'conformance'],
  examples: [],
  test: ['core', 'conf', 'runtime', 'sim', 'tools'],
  scripts: [],
  tools: [],
};

/**
 * Test-only code: tests, test helpers (a `testing/` folder, a `testing.ts` or `test-kit.ts` module) and the chaos soak, a repository
 * tool whose jobs are the runtime tests' jobs. None of it ships; product code never imports it.
 */
export const testOnlyPatterns = [
  '[.]test[.]ts$',
  '(^|/)testing/',
  '(^|/)(testing|test-kit)[.]ts$',
  '^runtime/chaos/',
];

/** Top-level folders that ship in the package (package.json "files"), less their test-only code. */
export const shippedFolders = ['bin', 'clients', 'conf', 'conformance', 'core', 'runtime'];

const testOnly = testOnlyPatterns.map((pattern) => new RegExp(pattern));

export function isTestOnly(path) {
  return testOnly.some((pattern) => pattern.test(path));
}

export function isShipped(path) {
  return shippedFolders.includes(path.split('/')[0]) && !isTestOnly(path);
}

/** The folder of the rules a file belongs to: 'runtime/transport', 'core/interpreter', 'core', 'runtime' (loose files). */
export function folderOf(path) {
  const named = namedSubfolders.find((folder) => path.startsWith(`${folder}/`));
  if (named !== undefined) return named;
  const parts = path.split('/');
  const top = parts[0];
  if (dividedFolders.includes(top) && parts.length > 2) return `${top}/${parts[1]}`;
  return top;
}

/** Whether code of `from` (a folder of the rules) may import a file of folder `to`. */
export function folderMayImport(from, to) {
  if (from === to) return true;
  return (mayImport[from] ?? []).some((entry) => {
    if (entry.endsWith(':files')) return to === entry.slice(0, -':files'.length);
    return to === entry || to.startsWith(`${entry}/`);
  });
}

/** The top-level folders a top-level folder's code may import: the union of its folders' rows. */
export function topMayImport(top) {
  const tops = new Set([top]);
  for (const [folder, entries] of Object.entries(mayImport)) {
    if (folder.split('/')[0] !== top) continue;
    for (const entry of entries) tops.add(entry.split(/[/:]/)[0]);
  }
  return [...tops];
}
