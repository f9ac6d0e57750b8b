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
          cache.answered(appId, shuffleId, given);
          if (status === 'SUCCESS') model.set(key, given);
        });
        for (const appId of ['a', 'b'])
          for (const shuffleId of [0, 1, 2])
            assert.equal(cache.lookup(appId, shuffleId), model.get(`${appId}/${shuffleId}`));
        assert.equal(cache.size, model.size);
      }),
    );
  });

  it('lets the first task of a shuffle ask, the next wait, and releases them all on a SUCCESS', () => {
    const cache = new FileGroupCache();
    assert.deepEqual(cache.claim('a', 0, 't0'), { kind: 'ask' });
    assert.deepEqual(cache.claim('a', 0, 't1'), { kind: 'wait' });
    assert.deepEqual(cache.claim('a', 0, 't2'), { kind: 'wait' });
    assert.deepEqual(cache.claim('a', 1, 'u0'), { kind: 'ask' }, 'another shuffle asks on its own');
    assert.deepEqual(
      cache.answered('a', 0, answer('STAGE_END_TIMEOUT')),
      [],
      'the asker asks again for them',
    );
    const done = answer('SUCCESS');
    assert.deepEqual(cache.answered('a', 0, done), ['t1', 't2']);
    assert.equal(cache.lookup('a', 0), done);
    assert.deepEqual(cache.claim('a', 0, 't3'), { kind: 'cached', answer: done });
    assert.deepEqual(cache.left('a', 0, 't0'), [], 'the asker ending after its SUCCESS changes nothing');
  });

  it('hands the ask of a task that leaves without a SUCCESS to the oldest waiter; a waiter leaving is dropped', () => {
    const cache = new FileGroupCache();
    cache.claim('a', 0, 't0');
    cache.claim('a', 0, 't1');
    cache.claim('a', 0, 't2');
    cache.claim('a', 0, 't3');
    assert.deepEqual(cache.left('a', 0, 't2'), []);
    assert.deepEqual(cache.answered('a', 0, answer('SHUFFLE_DATA_LOST')), []);
    assert.deepEqual(cache.left('a', 0, 't0'), ['t1']);
    assert.equal(cache.askerOf('a', 0), 't1');
    assert.deepEqual(cache.left('a', 0, 't1'), ['t3']);
    assert.deepEqual(cache.left('a', 0, 't3'), []);
    assert.equal(cache.askerOf('a', 0), undefined);
    assert.deepEqual(cache.claim('a', 0, 't4'), { kind: 'ask' });
  });

  it('forgets an unregistered shuffle whole: its answer, its asker, and its waiters are released', () => {
    const cache = new FileGroupCache();
    cache.claim('a', 0, 't0');
    cache.claim('a', 0, 't1');
    assert.deepEqual(cache.forget('a', 0), ['t1']);
    assert.equal(cache.askerOf('a', 0), undefined);
    assert.deepEqual(cache.left('a', 0, 't0'), [], 'the old asker is no one');
    assert.deepEqual(cache.claim('a', 0, 't2'), { kind: 'ask' });
  });

  it('under any interleaving of claims, answers, failures and forgets: no waiter is stranded, one asker at most', () => {
    // A task of one executor: waiting, asking (one ask in flight), or done (it read, failed, or was forgotten).
    type Phase = 'waiting' | 'asking' | 'done';
    const step = fc.oneof(
      fc.record({ op: fc.constant('start' as const), shuffleId: fc.nat(1) }),
      fc.record({
        op: fc.constant('answer' as const),
        pick: fc.nat(20),
        status: fc.constantFrom<StatusCode>('SUCCESS', 'STAGE_END_TIMEOUT', 'SHUFFLE_DATA_LOST'),
      }),
      fc.record({ op: fc.constant('leave' as const), pick: fc.nat(20) }),
      fc.record({ op: fc.constant('forget' as const), shuffleId: fc.nat(1) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const cache = new FileGroupCache();
        const tasks = new Map<string, { shuffleId: number; phase: Phase; generation: number }>();
        const generation = [0, 0];
        const start = (id: string) => {
          const task = tasks.get(id)!;
          // A released task starts as `lookup` says: from the cache, or asking.
          task.phase = cache.lookup('a', task.shuffleId) === undefined ? 'asking' : 'done';
        };
        const release = (ids: readonly string[]) => {
          for (const id of ids) {
            assert.equal(tasks.get(id)?.phase, 'waiting', `${id} is released only while it waits`);
            start(id);
          }
        };
        const live = (phase: Phase) => [...tasks].filter(([, t]) => t.phase === phase);
        const check = () => {
          for (const shuffleId of [0, 1]) {
            const current = [...tasks.values()].filter(
              (t) => t.shuffleId === shuffleId && t.generation === generation[shuffleId],
            );
            const askers = current.filter((t) => t.phase === 'asking').length;
            assert.ok(askers <= 1, `shuffle ${shuffleId}: ${askers} tasks ask at once`);
            if (current.some((t) => t.phase === 'waiting'))
              assert.equal(askers, 1, 'waiters with no one asking');
          }
        };
        steps.forEach((s, i) => {
          if (s.op === 'start') {
            const id = `t${i}`;
            tasks.set(id, { shuffleId: s.shuffleId, phase: 'waiting', generation: generation[s.shuffleId]! });
            const claim = cache.claim('a', s.shuffleId, id);
            if (claim.kind === 'cached') tasks.get(id)!.phase = 'done';
            else if (claim.kind === 'ask') start(id);
          } else if (s.op === 'answer') {
            const asking = live('asking');
            const [id, task] = asking[s.pick % Math.max(1, asking.length)] ?? [];
            if (id === undefined || task === undefined) return;
            const given = answer(s.status);
            const released = cache.answered('a', task.shuffleId, given);
            // The stage has not ended: the task asks again (still asking). Otherwise it reads or fails.
            if (s.status === 'STAGE_END_TIMEOUT') return;
            task.phase = 'done';
            release(released);
            if (s.status !== 'SUCCESS') release(cache.left('a', task.shuffleId, id));
          } else if (s.op === 'leave') {
            const active = [...live('asking'), ...live('waiting')];
            const [id, task] = active[s.pick % Math.max(1, active.length)] ?? [];
            if (id === undefined || task === undefined) return;
            task.phase = 'done';
            release(cache.left('a', task.shuffleId, id));
          } else {
            generation[s.shuffleId]! += 1;
            release(cache.forget('a', s.shuffleId));
          }
          check();
        });
        // Every ask in the end either succeeds or gives up: then nobody waits.
        for (let guard = 0; guard < 100 && live('asking').length > 0; guard++) {
          const [id, task] = live('asking')[0]!;
          task.phase = 'done';
          release(cache.left('a', task.shuffleId, id));
          check();
        }
        assert.deepEqual(live('waiting'), []);
      }),
      { numRuns: 500 },
    );
  });
});
