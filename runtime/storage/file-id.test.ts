import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { fileIdSegments, isPlainFileId } from './file-id.ts';

/** The rule, said plainly: no NUL, and every `/`-separated segment non-empty and neither `.` nor `..`. */
function plainBySegments(id: string): boolean {
  if (id.includes('\0')) return false;
  return id.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

// Ids drawn from the characters the rule turns on, so that edge cases are common rather than rare.
const tricky = fc
  .array(fc.constantFrom('/', '.', '\0', 'a', 'b', '-', '0'), { maxLength: 12 })
  .map((chars) => chars.join(''));

describe('file ids', () => {
  it('accepts exactly the ids whose segments are plain, in one pass', () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string()), (id) => {
        assert.equal(isPlainFileId(id), plainBySegments(id), JSON.stringify(id));
      }),
      { numRuns: 5_000 },
    );
  });

  it('splits a plain id into its segments and refuses any other with IO_ERROR', () => {
    assert.deepEqual(fileIdSegments('app-1-0/12-0-0'), ['app-1-0', '12-0-0']);
    assert.deepEqual(fileIdSegments('.hidden/..x'), ['.hidden', '..x']);
    for (const id of ['', '/etc/passwd', 'a//b', 'a/', './a', 'a/..', '..', 'a\0b']) {
      assert.throws(() => fileIdSegments(id), { code: 'IO_ERROR' }, JSON.stringify(id));
    }
  });
});
