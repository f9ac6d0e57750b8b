// The structure check of `npm run lint`: dependency-cruiser reads every import of the tree once (type-only imports
// included, resolved as tsconfig.json resolves them) and judges it against the folder rules of folders.mjs; the
// folder cycles are found here, on the folder graph of the product code, at the two levels the rules speak of.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import {
  dividedFolders,
  folderOf,
  isTestOnly,
  mayImport,
  namedSubfolders,
  shippedFolders,
  testOnlyPatterns,
  topFolders,
  topMayImport,
} from './folders.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A path regex for the files of a folder of the rules: a divided folder's loose files, or a folder less its named subfolders. */
function filesOf(folder) {
  if (dividedFolders.includes(folder)) return `^${escape(folder)}/[^/]+$`;
  const named = namedSubfolders.filter((other) => other.startsWith(`${folder}/`));
  const except = named.map((other) => `(?!${escape(other.slice(folder.length + 1))}/)`).join('');
  return `^${escape(folder)}/${except}`;
}

function targetsAllowed(folder) {
  return [
    filesOf(folder),
    ...mayImport[folder].map((entry) =>
      entry.endsWith(':files') ? filesOf(entry.slice(0, -':files'.length)) : `^${escape(entry)}/`,
    ),
  ];
}

const local = `^(${topFolders.map(escape).join('|')})/`;
const localPath = new RegExp(local);

/** The dependency-cruiser rules: one per folder, one per top-level folder, and the package-wide ones. */
export function ruleSet() {
  const folderRules = Object.keys(mayImport).map((folder) => ({
    name: `folder-imports:${folder}`,
    severity: 'error',
    comment: `${folder} may import ${mayImport[folder].join(', ').replaceAll(':files', ' (its loose files)') || 'nothing outside itself'}`,
    from: { path: filesOf(folder), pathNot: testOnlyPatterns },
    to: { path: local, pathNot: [...targetsAllowed(folder), ...testOnlyPatterns] },
  }));
  const topRules = topFolders.map((top) => ({
    name: `top-imports:${top}`,
    severity: 'error',
    comment: `code under ${top}/, tests included, may import ${topMayImport(top).join(', ')}`,
    from: { path: `^${escape(top)}/` },
    to: { path: local, pathNot: topMayImport(top).map((allowed) => `^${escape(allowed)}/`) },
  }));
  const shipped = `^(${shippedFolders.map(escape).join('|')})/`;
  return {
    forbidden: [
      ...folderRules,
      ...topRules,
      {
        name: 'shipped-imports-test-code',
        severity: 'error',
        comment:
          'the package (package.json "files") holds no test-only code, so nothing in it may import any',
        from: { path: shipped, pathNot: testOnlyPatterns },
        to: { path: testOnlyPatterns },
      },
      {
        name: 'shipped-imports-dev-dependency',
        severity: 'error',
        comment: 'an installed package has no devDependencies',
        from: { path: shipped, pathNot: testOnlyPatterns },
        to: { dependencyTypes: ['npm-dev'] },
      },
      {
        name: 'no-file-cycle',
        severity: 'error',
        comment:
          'modules import each other round a cycle (type-only imports, erased at run time, do not count)',
        from: {},
        to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
      },
    ],
  };
}

/** Strongly connected folders with more than one member: each is a folder cycle. */
function cyclesOf(edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node)?.keys() ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node), low.get(target)));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node), index.get(target)));
    }
    if (low.get(node) === index.get(node)) {
      const members = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        members.push(member);
      } while (member !== node);
      if (members.length > 1) cycles.push(members.sort());
    }
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

/** Folder cycles of the product code (tests and test helpers are imported by nothing that ships, so never close one). */
export function folderCycles(modules) {
  const problems = [];
  for (const [level, group] of [
    ['folder', folderOf],
    ['top-level folder', (file) => file.split('/')[0]],
  ]) {
    const edges = new Map();
    for (const module of modules) {
      if (!localPath.test(module.source) || isTestOnly(module.source)) continue;
      for (const dependency of module.dependencies) {
        const target = dependency.resolved;
        if (!localPath.test(target) || isTestOnly(target)) continue;
        const from = group(module.source);
        const to = group(target);
        if (from === to) continue;
        if (!edges.has(from)) edges.set(from, new Map());
        if (!edges.get(from).has(to)) edges.get(from).set(to, `${module.source} → ${target}`);
      }
    }
    for (const members of cyclesOf(edges)) {
      const inside = new Set(members);
      const links = members.flatMap((from) =>
        [...(edges.get(from) ?? new Map())].filter(([to]) => inside.has(to)).map(([, example]) => example),
      );
      problems.push({
        rule: 'no-folder-cycle',
        message: `${level}s ${members.join(', ')} import each other round a cycle: ${links.join('; ')}`,
      });
    }
  }
  return problems;
}

/** Code in a folder the rules do not name would be judged by no rule; each such folder must get a row first. */
function unlistedFolders(modules) {
  const unlisted = new Map();
  for (const module of modules) {
    if (!localPath.test(module.source)) continue;
    const folder = folderOf(module.source);
    if (mayImport[folder] === undefined && !unlisted.has(folder)) unlisted.set(folder, module.source);
  }
  return [...unlisted].map(([folder, example]) => ({
    rule: 'folder-without-rule',
    message: `${folder}/ (${example}) has no row in tools/structure/folders.mjs and docs/architecture.md`,
  }));
}

/**
 * Every problem of the given files (default: the whole tree less fixtures), each `{ rule, message }`. With
 * `fixtures`, files under a fixtures/ folder are read too and count as what their folder makes them.
 */
export async function checkStructure({ files = topFolders, fixtures = false } = {}) {
  const cwd = process.cwd();
  process.chdir(root);
  try {
    const result = await cruise(
      files,
      {
        ruleSet: ruleSet(),
        validate: true,
        tsPreCompilationDeps: true,
        tsConfig: { fileName: 'tsconfig.json' },
        exclude: { path: fixtures ? ['^node_modules/'] : ['^node_modules/', '(^|/)fixtures/'] },
        doNotFollow: { path: fixtures ? ['^node_modules/', '^(?!.*fixtures/)'] : ['^node_modules/'] },
        outputType: 'json',
      },
      {},
      { tsConfig: extractTSConfig(path.join(root, 'tsconfig.json')) },
    );
    const output = JSON.parse(result.output);
    const rules = new Map(ruleSet().forbidden.map((rule) => [rule.name, rule.comment]));
    const violations = output.summary.violations.map((violation) => ({
      rule: violation.rule.name,
      message:
        violation.cycle !== undefined
          ? `${[violation.from, ...violation.cycle.map((step) => step.name)].join(' → ')} (${rules.get(violation.rule.name)})`
          : `${violation.from} → ${violation.to} (${rules.get(violation.rule.name)})`,
    }));
    return [...unlistedFolders(output.modules), ...violations, ...folderCycles(output.modules)];
  } finally {
    process.chdir(cwd);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const problems = await checkStructure();
  for (const { rule, message } of problems) console.log(`error ${rule}: ${message}`);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (problems.length > 0) {
    console.log(`\n✖ ${problems.length} structure problems (docs/architecture.md, Rules), ${seconds} s`);
    process.exitCode = 1;
  } else console.log(`structure: folder rules, cycles and the package's imports hold (${seconds} s)`);
}
