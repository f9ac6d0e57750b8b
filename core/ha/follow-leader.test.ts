import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  currentMaster,
  followerAnswer,
  followMaster,
  leaderAddressOf,
  masterCursor,
  resendAfterNotLeader,
  resendAfterUnreachable,
  type MasterAnswer,
  type MasterCursor,
} from './follow-leader.ts';

const member = fc.integer({ min: 1, max: 9 }).map((n) => `h${n}:${9000 + n}`);
const members = fc.uniqueArray(member, { minLength: 1, maxLength: 5 });

function answers(group: readonly string[]): fc.Arbitrary<MasterAnswer> {
  const known = fc.constantFrom(...group);
  return fc.oneof(
    fc.record({ kind: fc.constant('unreachable' as const), member: fc.oneof(known, member) }),
    fc.record({
      kind: fc.constant('notLeader' as const),
      from: fc.oneof(known, member),
      leader: fc.option(fc.oneof(known, member), { nil: null }),
    }),
  );
}

describe('following the leader of a master group', () => {
  it('always names a member, whatever it heard', () => {
    fc.assert(
      fc.property(
        members.chain((group) => fc.tuple(fc.constant(group), fc.array(answers(group), { maxLength: 30 }))),
        ([group, heard]) => {
          let cursor: MasterCursor = masterCursor(group);
          for (const answer of heard) {
            cursor = followMaster(cursor, answer);
            assert.ok(cursor.current >= 0 && cursor.current < cursor.members.length, 'current in range');
            assert.ok(cursor.members.includes(currentMaster(cursor)), 'current is a member');
            assert.equal(new Set(cursor.members).size, cursor.members.length, 'no member twice');
          }
        },
      ),
    );
  });

  it('tries every member once in as many failures of the current one', () => {
    fc.assert(
      fc.property(members, fc.nat(), (group, start) => {
        let cursor: MasterCursor = { ...masterCursor(group), current: start % group.length };
        const tried = new Set<string>();
        for (let i = 0; i < group.length; i++) {
          tried.add(currentMaster(cursor));
          cursor = followMaster(cursor, { kind: 'unreachable', member: currentMaster(cursor) });
        }
        assert.equal(tried.size, group.length);
      }),
    );
  });

  it('goes to a named leader, member or not, and ignores late news of a member it left', () => {
    fc.assert(
      fc.property(members, member, member, (group, from, leader) => {
        fc.pre(from !== leader);
        const cursor = followMaster(masterCursor(group), { kind: 'notLeader', from, leader });
        assert.equal(currentMaster(cursor), leader);
        const stale = group.find((m) => m !== leader);
        if (stale !== undefined) {
          assert.deepEqual(followMaster(cursor, { kind: 'unreachable', member: stale }), cursor);
        }
      }),
    );
  });

  it('moves on from a follower that knows no leader', () => {
    fc.assert(
      fc.property(members, (group) => {
        fc.pre(group.length > 1);
        const cursor = masterCursor(group);
        const moved = followMaster(cursor, { kind: 'notLeader', from: currentMaster(cursor), leader: null });
        assert.notEqual(currentMaster(moved), currentMaster(cursor));
      }),
    );
  });

  it('sends a request on only to a named leader, at most once per member', () => {
    fc.assert(
      fc.property(members, fc.nat({ max: 10 }), fc.option(member, { nil: null }), (group, sent, leader) => {
        const cursor = masterCursor(group);
        assert.equal(resendAfterNotLeader(cursor, { leader }, sent), leader !== null && sent < group.length);
      }),
    );
  });

  it('sends a request whose member was unreachable on to the next, each member once, never back', () => {
    fc.assert(
      fc.property(members, (group) => {
        let cursor = masterCursor(group);
        const visited = [currentMaster(cursor)];
        for (let resent = 0; ; resent++) {
          const sentTo = currentMaster(cursor);
          cursor = followMaster(cursor, { kind: 'unreachable', member: sentTo });
          if (!resendAfterUnreachable(cursor, sentTo, resent)) break;
          visited.push(currentMaster(cursor));
        }
        assert.equal(visited.length, group.length, `visited ${visited.join(' ')}`);
        assert.equal(new Set(visited).size, group.length, 'no member twice');
      }),
    );
  });

  it('does not resend when the cursor still names the member the request failed at', () => {
    fc.assert(
      fc.property(members, fc.nat({ max: 10 }), (group, resent) => {
        const cursor = masterCursor(group);
        assert.equal(resendAfterUnreachable(cursor, currentMaster(cursor), resent), false);
      }),
    );
  });

  it('a follower answers NotLeader to a peer that follows, and a refusal older peers handle otherwise', () => {
    assert.equal(leaderAddressOf('m1@10.0.0.1:9097'), '10.0.0.1:9097');
    assert.equal(leaderAddressOf(null), null);
    assert.deepEqual(followerAnswer({ member: 'm2', leader: 'm1@h:1', peerFollowsLeader: true }), {
      type: 'NotLeader',
      leader: 'h:1',
      message: 'master m2 does not lead its group; the leader is m1@h:1',
    });
    const old = followerAnswer({ member: 'm2', leader: null, peerFollowsLeader: false });
    assert.equal(old.type, 'StatusResponse');
    assert.match(JSON.stringify(old), /REQUEST_FAILED.*no leader is known yet/);
  });
});
