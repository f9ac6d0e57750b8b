import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { StatusCode } from '../../domain/status.ts';
import { FileGroupCache, type FileGroupAnswer } from './file-group-cache.ts';

const answer = (status: StatusCode, message = ''): FileGroupAnswer => ({
  type: 'GetReducerFileGroupResponse',
  status,
  fileGroups: [],
  mapAttempts: [],
  message,
});

describe('FileGroupCache', () => {
  it('keeps the latest SUCCESS answer of each shuffle of each application, never another status, until forgotten', () => {
    const event = fc.record({
      op: fc.constantFrom('remember', 'forget'),
      appId: fc.constantFrom('a', 'b'),
      shuffleId: fc.nat(2),
      status: fc.constantFrom<StatusCode>('SUCCESS', 'STAGE_END_TIMEOUT', 'SHUFFLE_DATA_LOST'),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        const cache = new FileGroupCache();
        const model = new Map<string, FileGroupAnswer>();
        events.forEach(({ op, appId, shuffleId, status }, i) => {
          const key = `${appId}/${shuffleId}`;
          if (op === 'forget') {
            cache.forget(appId, shuffleId);
            model.delete(key);
            return;
          }
          const given = answer(status, `#${i}`);
          cache.remember(appId, shuffleId, given);
          if (status === 'SUCCESS') model.set(key, given);
        });
        for (const appId of ['a', 'b'])
          for (const shuffleId of [0, 1, 2])
            assert.equal(cache.lookup(appId, shuffleId), model.get(`${appId}/${shuffleId}`));
        assert.equal(cache.size, model.size);
      }),
    );
  });
});
