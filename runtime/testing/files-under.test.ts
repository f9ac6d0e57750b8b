// The walk of a worker's storage while it may be deleting (the chaos soak, the tests of files left).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { filesUnder } from './files-under.ts';

describe('filesUnder', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-files-under-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'app-1', 'shuffle-0'), { recursive: true });
  mkdirSync(path.join(root, 'app-2'), { recursive: true });
  writeFileSync(path.join(root, 'app-1', 'shuffle-0', 'a'), 'x');
  writeFileSync(path.join(root, 'app-2', 'b'), 'x');
  writeFileSync(path.join(root, 'c'), 'x');

  it('lists every file at any depth, and nothing under a directory that does not exist', () => {
    assert.deepEqual(filesUnder(root).sort(), [
      path.join(root, 'app-1', 'shuffle-0', 'a'),
      path.join(root, 'app-2', 'b'),
      path.join(root, 'c'),
    ]);
    assert.deepEqual(filesUnder(path.join(root, 'gone')), []);
  });

  it('skips a directory deleted after its parent listed it, and still lists the rest', () => {
    const deletedMeanwhile = path.join(root, 'app-1');
    const rows = filesUnder(root, (dir) => {
      if (dir === deletedMeanwhile) {
        throw Object.assign(new Error(`ENOENT: no such file or directory, scandir '${dir}'`), {
          code: 'ENOENT',
        });
      }
      return readdirSync(dir, { withFileTypes: true });
    });
    assert.deepEqual(rows.sort(), [path.join(root, 'app-2', 'b'), path.join(root, 'c')]);
  });

  it('passes on any other error', () => {
    assert.throws(
      () =>
        filesUnder(root, () => {
          throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
        }),
      /EACCES/,
    );
  });
});
