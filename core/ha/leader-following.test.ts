import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Message } from '../protocol/messages.ts';
import { LeaderFollowing, type FollowedEnvelope, type FollowLine } from './leader-following.ts';

const MASTER = 'master-0';
const HEARTBEAT: Message = { type: 'StatusResponse', status: 'SUCCESS', message: 'a request' };

function request(requestId: number): FollowedEnvelope {
  return { from: 'worker-a', to: MASTER, requestId, message: HEARTBEAT };
}

function notLeader(inReplyTo: number, leader: string): FollowedEnvelope {
  return {
    from: MASTER,
    to: 'worker-a',
    inReplyTo,
    message: { type: 'NotLeader', leader, message: 'not the leader' },
  };
}

function following(members = ['m1', 'm2', 'm3']) {
  const lines: FollowLine[] = [];
  const f = new LeaderFollowing<FollowedEnvelope>({
    masterId: MASTER,
    members,
    moved: (line) => lines.push(line),
  });
  return { f, lines };
}

describe('following the leader: the requests remembered and sent on', () => {
  it('sends a request answered NotLeader on to the named leader, and says so once', () => {
    const { f, lines } = following();
    f.send(request(1));
    const outcome = f.received(notLeader(1, 'm3'));
    assert.equal(outcome.kind, 'resend');
    assert.equal(f.current, 'm3');
    assert.deepEqual(
      lines.map((l) => [l.from, l.to, l.why]),
      [['m1', 'm3', 'notLeader']],
    );
    assert.equal(f.received({ ...notLeader(1, ''), message: HEARTBEAT }).kind, 'pass', 'the answer ends it');
  });

  it('moves on from a member whose send failed and sends the request to the next one at once', () => {
    const { f, lines } = following();
    f.send(request(7));
    const outcome = f.sendFailed(request(7));
    assert.equal(outcome.kind, 'resend');
    assert.equal(f.current, 'm2');
    assert.equal(lines[0]?.why, 'unreachable');
  });

  it('after a connect failure moved the cursor first, the failed send still goes on (once) to the next member', () => {
    const { f } = following();
    f.send(request(2));
    f.unreachable('m1');
    assert.equal(f.current, 'm2');
    assert.equal(f.sendFailed(request(2)).kind, 'resend');
    assert.equal(f.current, 'm2', 'the connect failure already moved it: not moved twice');
  });

  it('passes failed sends that are not requests to the master, and ones it forgot', () => {
    const { f } = following();
    assert.equal(f.sendFailed({ ...request(3), to: 'worker-b' }).kind, 'pass');
    assert.equal(f.sendFailed(request(3)).kind, 'pass', 'never sent through the following');
    assert.equal(f.current, 'm1');
  });

  it('a request whose every member is unreachable visits each once, then fails at its sender', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), (size) => {
        const members = Array.from({ length: size }, (_, i) => `m${i + 1}`);
        const { f } = following(members);
        f.send(request(1));
        const visited = [f.current];
        for (;;) {
          const outcome = f.sendFailed(request(1));
          if (outcome.kind !== 'resend') break;
          visited.push(f.current);
        }
        assert.equal(new Set(visited).size, size, `visited ${visited.join(' ')}`);
        assert.equal(visited.length, size);
      }),
    );
  });

  it('mixes NotLeader and unreachable members within one bound per request', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant('unreachable' as const), fc.constantFrom('m1', 'm2', 'm3', '')), {
          maxLength: 20,
        }),
        (events) => {
          const { f } = following();
          f.send(request(1));
          let resends = 0;
          for (const event of events) {
            const outcome =
              event === 'unreachable' ? f.sendFailed(request(1)) : f.received(notLeader(1, event));
            if (outcome.kind !== 'resend') break;
            resends += 1;
          }
          assert.ok(resends <= 3, `${resends} resends in a group of three`);
        },
      ),
    );
  });

  it('forgets the oldest request past its bound', () => {
    const f = new LeaderFollowing<FollowedEnvelope>({
      masterId: MASTER,
      members: ['m1', 'm2'],
      maxRemembered: 2,
    });
    for (const id of [1, 2, 3]) f.send(request(id));
    assert.equal(f.sendFailed(request(1)).kind, 'pass', 'forgotten');
    assert.equal(f.sendFailed(request(3)).kind, 'resend');
  });
});
