import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Principal } from '../machines/effects.ts';
import { ReplyRoutes } from './reply-routes.ts';

interface Conn {
  readonly id: number;
  readonly principal: Principal | undefined;
}

const app = (appId: string): Principal => ({ kind: 'application', appId });

function table(closed: Set<number>, idleMs = 1000, authenticated = false): ReplyRoutes<Conn> {
  return new ReplyRoutes<Conn>({ authenticated }, idleMs, 0, {
    key: (c) => c.id,
    open: (c) => !closed.has(c.id),
    principal: (c) => c.principal,
  });
}

describe('ReplyRoutes', () => {
  it('routes a node to the open connection it last spoke on, and forgets it with that connection', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('spoke' as const),
              node: fc.integer({ min: 0, max: 3 }),
              conn: fc.integer({ min: 0, max: 3 }),
            }),
            fc.record({ kind: fc.constant('close' as const), conn: fc.integer({ min: 0, max: 3 }) }),
          ),
          { maxLength: 40 },
        ),
        (events) => {
          const closed = new Set<number>();
          const routes = table(closed, 1e9);
          const model = new Map<string, number>();
          const conns = [0, 1, 2, 3].map((id) => ({ id, principal: undefined }));
          for (const event of events) {
            if (event.kind === 'spoke') {
              if (closed.has(event.conn)) continue;
              assert.equal(routes.spoke(`n${event.node}`, conns[event.conn]!, 0), undefined);
              model.set(`n${event.node}`, event.conn);
            } else {
              closed.add(event.conn);
              routes.forget(conns[event.conn]!);
              for (const [node, conn] of model) if (conn === event.conn) model.delete(node);
            }
          }
          for (let n = 0; n < 4; n += 1) {
            assert.equal(routes.route(`n${n}`)?.id, model.get(`n${n}`), `route of n${n}`);
          }
          assert.equal(routes.size, model.size);
        },
      ),
      { interruptAfterTimeLimit: 20_000, markInterruptAsFailure: true },
    );
  });

  it('forgets the routes of nodes silent for longer than the idle time', () => {
    const routes = table(new Set(), 1000);
    const conn = { id: 1, principal: undefined };
    routes.spoke('task', conn, 0);
    routes.spoke('worker', conn, 400);
    assert.equal(routes.route('task')?.id, 1, 'swept only every half idle time');
    routes.spoke('worker', conn, 1600);
    assert.equal(routes.route('task'), undefined, 'silent since 0: forgotten');
    assert.equal(routes.route('worker')?.id, 1);
  });

  it("refuses another application's takeover of an open route, with authentication on", () => {
    const routes = table(new Set(), 1000, true);
    const own = { id: 1, principal: app('a') };
    const intruder = { id: 2, principal: app('b') };
    assert.equal(routes.spoke('task-a', own, 0), undefined);
    assert.notEqual(routes.spoke('task-a', intruder, 1), undefined, 'refused');
    assert.equal(routes.route('task-a')?.id, 1, 'the route stays');
  });
});
