import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { installedDocs } from './docs-location.ts';

describe("--help's documentation line", () => {
  it("finds the docs of the package a module is in, from the source tree or a compiled copy's dist/", () => {
    const root = mkdtempSync(path.join(tmpdir(), 'svc-docs-'));
    try {
      mkdirSync(path.join(root, 'docs'));
      writeFileSync(path.join(root, 'package.json'), '{}');
      writeFileSync(path.join(root, 'docs', 'operations.md'), '# Operations\n');
      const compiled = path.join(root, 'dist', 'runtime', 'cli');
      mkdirSync(compiled, { recursive: true });
      assert.equal(installedDocs(compiled), path.join(root, 'docs'), 'from dist/runtime/cli');
      assert.equal(installedDocs(root), path.join(root, 'docs'), 'from the package root');
      rmSync(path.join(root, 'docs'), { recursive: true });
      assert.equal(installedDocs(compiled), undefined, 'a copy without docs names none');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("names this repository's docs/ when run from the source tree", () => {
    assert.equal(installedDocs(), path.resolve(import.meta.dirname, '../../docs'), 'the source tree');
  });
});
