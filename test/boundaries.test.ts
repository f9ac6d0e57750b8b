import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { boundaryConfigs } from '../tools/eslint/boundaries.js';
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
    const eslint = new ESLint({ cwd: root, errorOnUnmatchedPattern: false });
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
