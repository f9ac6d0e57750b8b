// docs/client.md shows the word count an application can copy: it must be the runnable example, line for line,
// which test/packaged-client.test.ts runs against a cluster from an application outside the repository.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

describe('docs/client.md', () => {
  it('shows examples/word-count.mjs as it is (after its header comment)', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'client.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## A word count'));
    const block = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    const example = readFileSync(path.join(ROOT, 'examples', 'word-count.mjs'), 'utf8')
      .split('\n')
      .filter((line, index, lines) => !lines.slice(0, index + 1).every((l) => l.startsWith('//')))
      .join('\n')
      .replace(/^\n+/, '');
    assert.equal(block, example);
  });

  it('links the library through the one entry point the package exports', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'client.md'), 'utf8');
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'packages', 'client', 'package.json'), 'utf8')) as {
      name: string;
      exports: Record<string, unknown>;
    };
    assert.equal(pkg.name, '@svc-shuffle/client');
    assert.deepEqual(Object.keys(pkg.exports).sort(), ['.', './package.json']);
    assert.match(doc, /from '@svc-shuffle\/client'/);
    assert.doesNotMatch(doc, /from 'svc\/client'/, 'the unscoped name is another package');
    assert.doesNotMatch(doc, /runtime\/client\/[a-z-]+\.(ts|js)'/, 'no deep import of the sources');
  });
});
