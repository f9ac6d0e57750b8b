import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { boundaryConfigs } from '../tools/eslint/boundaries.js';
import { checkStructure } from '../tools/structure/check.mjs';
import {
  dividedFolders,
  folderMayImport,
  isShipped,
  mayImport,
  topMayImport,
} from '../tools/structure/folders.mjs';
import tseslint from 'typescript-eslint';

const root = new URL('..', import.meta.url).pathname;

async function lintFixture(relativePath: string) {
  const text = readFileSync(root + relativePath, 'utf8');
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } },
      ...boundaryConfigs,
    ],
  });
  const [result] = await eslint.lintText(text, { filePath: root + relativePath });
  assert.ok(result, 'result');
  const expected = text.split('\n').flatMap((line, index) => (line.includes('// report') ? [index + 1] : []));
  const reported = [...new Set(result.messages.map((m) => m.line))].sort((a, b) => a - b);
  return { expected, reported, messages: result.messages };
}

describe('purity boundary of core/ and conf/', () => {
  it('reports every impure construct in a core/ module, and nothing else', async () => {
    const { expected, reported, messages } = await lintFixture('core/fixtures/boundary-violation.ts');
    assert.deepEqual(reported, expected);
    assert.ok(
      messages.some((m) => m.ruleId === 'svc/pure-imports' && /Node\.js module/.test(m.message)),
      "messages.some((m) => m.ruleId === 'svc/pure-imports' && /Node\\.js module/.test(m.message))",
    );
    assert.ok(
      messages.some((m) => m.ruleId === 'svc/pure-imports' && /runtime\//.test(m.message)),
      "messages.some((m) => m.ruleId === 'svc/pure-imports' && /runtime\\//.test(m.message))",
    );
    assert.ok(
      messages.some((m) => m.ruleId === 'no-restricted-syntax' && /async/.test(m.message)),
      "messages.some((m) => m.ruleId === 'no-restricted-syntax' && /async/.test(m.message))",
    );
    assert.ok(
      messages.some((m) => m.ruleId === 'no-restricted-syntax' && /Promise/.test(m.message)),
      "messages.some((m) => m.ruleId === 'no-restricted-syntax' && /Promise/.test(m.message))",
    );
    assert.ok(
      messages.some((m) => m.ruleId === 'no-restricted-properties' && /Randomness/.test(m.message)),
      "messages.some((m) => m.ruleId === 'no-restricted-properties' && /Randomness/.test(m.message))",
    );
  });

  it('lets conf/ import yaml and core/ but nothing with side effects', async () => {
    const { expected, reported } = await lintFixture('conf/fixtures/boundary-violation.ts');
    assert.deepEqual(reported, expected);
  });

  it('finds nothing to report in the real core/ and conf/ sources', async () => {
    // The boundary rules need no type information, so this reads the sources without the type-aware project (which
    // `npm run lint` runs anyway): seconds instead of minutes.
    const eslint = new ESLint({
      cwd: root,
      errorOnUnmatchedPattern: false,
      overrideConfigFile: true,
      overrideConfig: [
        { ignores: ['**/fixtures/**'] },
        { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } },
        ...boundaryConfigs,
      ],
    });
    const results = await eslint.lintFiles(['core/**/*.ts', 'conf/**/*.ts']);
    const boundaryRules = [
      'svc/pure-imports',
      'no-restricted-globals',
      'no-restricted-properties',
      'no-restricted-syntax',
    ];
    const boundaryProblems = results.flatMap((r) =>
      r.messages
        .filter((m) => boundaryRules.includes(m.ruleId ?? ''))
        .map((m) => `${r.filePath}:${m.line} ${m.message}`),
    );
    assert.deepEqual(boundaryProblems, []);
    assert.ok(results.length > 0, 'core/ has sources to check');
  });
});

describe('folder rules, cycles and the package (tools/structure)', () => {
  // Each fixture breaks one rule; the normal lint skips fixtures/, this test reads them as what their folder makes them.
  const fixtures = [
    'sim/world/fixtures',
    'sim/workload/fixtures',
    'runtime/wire/fixtures',
    'runtime/client/fixtures',
  ];

  it('reports a folder cycle, a file cycle, a forbidden folder import and shipped code importing test code', async () => {
    const problems = await checkStructure({ files: fixtures, fixtures: true });
    const named = (rule: string, text: RegExp) =>
      problems.some((problem) => problem.rule === rule && text.test(problem.message));
    assert.ok(
      named('no-folder-cycle', /sim\/workload, sim\/world import each other/),
      JSON.stringify(problems, null, 2),
    );
    assert.ok(
      named('no-file-cycle', /file-cycle-a\.ts → sim\/world\/fixtures\/file-cycle-b\.ts/),
      "named('no-file-cycle', /file-cycle-a\\.ts → sim\\/world\\/fixtures\\/file-cycle-b\\.ts/)",
    );
    assert.ok(
      named('folder-imports:runtime/wire', /forbidden-import\.ts → runtime\/process\/master\.ts/),
      "named('folder-imports:runtime/wire', /forbidden-import\\.ts → runtime\\/process\\/master\\.ts/)",
    );
    assert.ok(
      named('shipped-imports-test-code', /imports-test-code\.ts → runtime\/testing\/deadline\.ts/),
      "named('shipped-imports-test-code', /imports-test-code\\.ts → runtime\\/testing\\/deadline\\.ts/)",
    );
    assert.equal(problems.length, 5, JSON.stringify(problems, null, 2));
  });

  it('allows no cycle in the rules themselves, at either level', () => {
    const folders = [...Object.keys(mayImport), ...dividedFolders];
    const tops = [...new Set(folders.map((folder) => folder.split('/')[0] ?? folder))];
    for (const [nodes, allows] of [
      [folders, folderMayImport],
      [tops, (from: string, to: string) => topMayImport(from).includes(to)],
    ] as const) {
      const visiting = new Set<string>();
      const done = new Set<string>();
      const visit = (node: string, trail: string[]): void => {
        assert.ok(!visiting.has(node), `the rules allow a cycle: ${[...trail, node].join(' → ')}`);
        if (done.has(node)) return;
        visiting.add(node);
        for (const next of nodes) if (next !== node && allows(node, next)) visit(next, [...trail, node]);
        visiting.delete(node);
        done.add(node);
      };
      for (const node of nodes) visit(node, []);
    }
  });

  it('compiles into the published packages only entry points the rules call shipped', () => {
    // A package holds its entry points' import closure (scripts/build.mjs); the rule shipped-imports-test-code keeps
    // test-only code out of that closure, so the entry points are what is left to check.
    for (const name of readdirSync(root + 'packages', { withFileTypes: true })) {
      if (!name.isDirectory()) continue;
      const config = JSON.parse(readFileSync(`${root}packages/${name.name}/tsconfig.build.json`, 'utf8')) as {
        files: string[];
      };
      for (const file of config.files) {
        const source = file.replace(/^\.\.\/\.\.\//, '');
        assert.ok(isShipped(source), `packages/${name.name} compiles ${source}, which the rules do not ship`);
      }
    }
  });

  it('names every folder of the rules in docs/architecture.md', () => {
    const architecture = readFileSync(root + 'docs/architecture.md', 'utf8');
    for (const folder of Object.keys(mayImport))
      assert.ok(architecture.includes(`| \`${folder}/\``), `docs/architecture.md has no row for ${folder}/`);
  });
});
