import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { UnansweredRequests } from './unanswered-requests.ts';

interface Request {
  readonly asker: string;
  readonly requestId: number;
  readonly serial: number;
}

type Op =
  | { readonly kind: 'ask'; readonly peer: number; readonly asker: string; readonly requestId: number }
  | { readonly kind: 'answer'; readonly peer: number; readonly asker: string; readonly requestId: number }
  | { readonly kind: 'end'; readonly peer: number };

const peerArb = fc.integer({ min: 0, max: 3 });
const askerArb = fc.constantFrom('lm', 'map-1', 'map-2', 'worker-a');
const requestIdArb = fc.integer({ min: 1, max: 6 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('ask' as const), peer: peerArb, asker: askerArb, requestId: requestIdArb }),
  fc.record({
    kind: fc.constant('answer' as const),
    peer: peerArb,
    asker: askerArb,
    requestId: requestIdArb,
  }),
  fc.record({ kind: fc.constant('end' as const), peer: peerArb }),
);

/** The plainest model: a list of what each peer owes, in the order asked. */
class Model {
  readonly owed = new Map<number, Request[]>();

  ask(peer: number, request: Request): void {
    const list = this.owed.get(peer) ?? [];
    const at = list.findIndex((r) => r.asker === request.asker && r.requestId === request.requestId);
    if (at >= 0) list[at] = request;
    else list.push(request);
    this.owed.set(peer, list);
  }

  answer(peer: number, asker: string, requestId: number): boolean {
    const list = this.owed.get(peer) ?? [];
    const at = list.findIndex((r) => r.asker === asker && r.requestId === requestId);
    if (at < 0) return false;
    list.splice(at, 1);
    return true;
  }

  end(peer: number): Request[] {
    const list = this.owed.get(peer) ?? [];
    this.owed.delete(peer);
    return list;
  }
}

describe('UnansweredRequests', () => {
  it('property: fails exactly what each peer owed when it ends, once, in the order asked', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const record = new UnansweredRequests<number, Request>();
        const model = new Model();
        ops.forEach((op, serial) => {
          switch (op.kind) {
            case 'ask': {
              const request = { asker: op.asker, requestId: op.requestId, serial };
              record.asked(op.peer, op.asker, op.requestId, request, serial);
              model.ask(op.peer, request);
              break;
            }
            case 'answer':
              assert.equal(
                record.answered(op.peer, op.asker, op.requestId),
                model.answer(op.peer, op.asker, op.requestId),
              );
              break;
            case 'end':
              assert.deepEqual(record.ended(op.peer), model.end(op.peer));
              assert.equal(record.waiting(op.peer), 0, 'an ended peer owes nothing');
              break;
          }
          for (const peer of [0, 1, 2, 3]) {
            assert.equal(record.waiting(peer), model.owed.get(peer)?.length ?? 0);
          }
        });
      }),
    );
  });

  it('property: a request is failed at most once, and never once answered', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const record = new UnansweredRequests<number, Request>();
        const failed = new Set<number>();
        const answered = new Set<number>();
        const latest = new Map<string, number>();
        ops.forEach((op, serial) => {
          const key = `${op.kind === 'end' ? '' : `${op.peer}/${op.asker}#${op.requestId}`}`;
          if (op.kind === 'ask') {
            record.asked(
              op.peer,
              op.asker,
              op.requestId,
              { asker: op.asker, requestId: op.requestId, serial },
              0,
            );
            latest.set(key, serial);
          } else if (op.kind === 'answer') {
            if (record.answered(op.peer, op.asker, op.requestId)) answered.add(latest.get(key)!);
          } else {
            for (const request of record.ended(op.peer)) {
              assert.ok(!failed.has(request.serial), 'failed twice');
              assert.ok(!answered.has(request.serial), 'failed although answered');
              failed.add(request.serial);
            }
          }
        });
      }),
    );
  });

  it('property: waitingSince is the earliest ask among what the peer still owes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(opArb, fc.integer({ min: 0, max: 1_000 })), { maxLength: 60 }),
        (steps) => {
          const record = new UnansweredRequests<number, Request>();
          const owed = new Map<number, Map<string, number>>();
          steps.forEach(([op, now], serial) => {
            const key = op.kind === 'end' ? '' : `${op.asker}#${op.requestId}`;
            if (op.kind === 'ask') {
              record.asked(
                op.peer,
                op.asker,
                op.requestId,
                { asker: op.asker, requestId: op.requestId, serial },
                now,
              );
              owed.set(op.peer, (owed.get(op.peer) ?? new Map<string, number>()).set(key, now));
            } else if (op.kind === 'answer') {
              record.answered(op.peer, op.asker, op.requestId);
              owed.get(op.peer)?.delete(key);
            } else {
              record.ended(op.peer);
              owed.delete(op.peer);
            }
            for (const peer of [0, 1, 2, 3]) {
              const times = [...(owed.get(peer)?.values() ?? [])];
              assert.equal(record.waitingSince(peer), times.length === 0 ? undefined : Math.min(...times));
            }
          });
        },
      ),
    );
  });

  it('keeps peers apart: one ending fails nothing another owes', () => {
    const record = new UnansweredRequests<string, string>();
    record.asked('worker-1', 'map-1', 1, 'push 1', 0);
    record.asked('worker-2', 'map-1', 2, 'push 2', 0);
    record.asked('worker-2', 'map-1', 1, 'push 3', 0);
    assert.deepEqual(record.ended('worker-1'), ['push 1']);
    assert.deepEqual(record.ended('worker-1'), [], 'an ended peer is forgotten');
    assert.equal(record.answered('worker-2', 'map-1', 2), true);
    assert.equal(record.answered('worker-2', 'map-1', 2), false, 'a second answer was owed nothing');
    assert.deepEqual(record.ended('worker-2'), ['push 3']);
  });

  it("with the planted bug 'unanswered-not-failed', fails nothing when a peer ends", () => {
    const record = new UnansweredRequests<string, string>({ plantedBug: 'unanswered-not-failed' });
    record.asked('worker-1', 'map-1', 1, 'push 1', 0);
    assert.deepEqual(record.ended('worker-1'), []);
    assert.equal(record.waiting('worker-1'), 0);
  });
});
