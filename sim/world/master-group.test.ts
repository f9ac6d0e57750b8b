import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Envelope, Input } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { GroupFollowing, type Resend } from './master-group.ts';

const HEARTBEAT: Message = { type: 'StatusResponse', status: 'SUCCESS', message: 'stands for any request' };

function group() {
  return new GroupFollowing({
    masterId: 'master-0',
    members: ['master-1', 'master-2', 'master-3'],
    standby: () => ({ kind: 'refused' }),
    mayAct: () => true,
    persist: () => undefined,
  });
}

function from(member: string, message: Message, ids: Partial<Envelope>): Input {
  return {
    kind: 'receive',
    envelope: { from: member, to: 'worker-a', fromRelease: CURRENT_RELEASE, message, ...ids },
  };
}

describe("the world's master group: processes follow its leader through the core", () => {
  it('sends requests to the member the core names, and what a member sends comes from the master', () => {
    const g = group();
    assert.equal(g.addressee('worker-a', { to: 'master-0', requestId: 1, message: HEARTBEAT }), 'master-1');
    assert.equal(g.addressee('worker-a', { to: 'host-b', requestId: 2, message: HEARTBEAT }), undefined);
    assert.equal(
      g.addressee('master-2', { to: 'master-0', message: HEARTBEAT }),
      undefined,
      'members are not followers',
    );
    const seen = g.arriving('worker-a', from('master-1', HEARTBEAT, { inReplyTo: 1 }), () =>
      assert.fail('no resend'),
    );
    assert.equal(seen?.kind === 'receive' ? seen.envelope.from : undefined, 'master-0');
  });

  it('answers a member that asked at that member, whatever the cursor names', () => {
    const g = group();
    g.arriving('worker-a', from('master-3', HEARTBEAT, { requestId: 9 }), () => undefined);
    assert.equal(g.addressee('worker-a', { to: 'master-0', inReplyTo: 9, message: HEARTBEAT }), 'master-3');
  });

  it('resends a request answered NotLeader to the named leader, and one whose member was unreachable to the next', () => {
    const g = group();
    const resends: Resend[] = [];
    g.addressee('worker-a', { to: 'master-0', requestId: 1, message: HEARTBEAT });
    const notLeader: Message = { type: 'NotLeader', leader: 'master-3', message: 'not the leader' };
    assert.equal(
      g.arriving('worker-a', from('master-1', notLeader, { inReplyTo: 1 }), (r) => resends.push(r)),
      undefined,
    );
    assert.deepEqual(resends.slice(), [{ to: 'master-3', message: HEARTBEAT, requestId: 1 }]);
    const failed: Input = { kind: 'sendFailed', to: 'master-3', message: HEARTBEAT, requestId: 1 };
    assert.equal(
      g.arriving('worker-a', failed, (r) => resends.push(r)),
      undefined,
    );
    assert.equal(resends.at(-1)?.to, 'master-1', 'moved on from master-3 to the next member');
  });

  it('fails a request at its sender, as from the master, once every member was tried', () => {
    const g = group();
    g.addressee('worker-a', { to: 'master-0', requestId: 4, message: HEARTBEAT });
    let to = 'master-1';
    for (let i = 0; i < 3; i += 1) {
      const seen = g.arriving(
        'worker-a',
        { kind: 'sendFailed', to, message: HEARTBEAT, requestId: 4 },
        (r) => {
          to = r.to;
        },
      );
      if (i < 2) assert.equal(seen, undefined, `resent after failure ${i + 1}`);
      else assert.deepEqual(seen, { kind: 'sendFailed', to: 'master-0', message: HEARTBEAT, requestId: 4 });
    }
  });
});
