import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Envelope, Input, NodeId, Principal } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { StatusResponse } from '../../core/protocol/messages.ts';
import { simApplicationSecret } from './handshakes.ts';
import type { TransportModel } from './routes.ts';
import { World } from './world.ts';

// The world's routes, the core's reply routes: replies and messages to tasks go on the connection
// their addressee last spoke on, under the core's speaker rules (core/protocol/speakers.ts).

const TASK = 'map-a-0-0-0';
const APP_A: Principal = { kind: 'application', appId: 'a' };
const note = (text: string): StatusResponse => ({ type: 'StatusResponse', status: 'SUCCESS', message: text });

/** A worker that answers every request 10 ms later and sends what `at` schedules; records what it hears. */
function server(sends: readonly { readonly at: number; readonly to: NodeId }[]): Machine<Input[]> {
  return {
    step(state, input, now) {
      const effects: Effect[] = [];
      if (input.kind === 'start') {
        sends.forEach(({ at }, i) => effects.push({ kind: 'setTimer', name: `send-${i}`, at: now + at }));
      }
      if (input.kind === 'receive' && input.envelope.requestId !== undefined) {
        effects.push({
          kind: 'setTimer',
          name: `answer-${input.envelope.from}-${input.envelope.requestId}`,
          at: now + 10,
        });
      }
      const answer = input.kind === 'timer' ? /^answer-(.*)-(\d+)$/.exec(input.name) : null;
      if (answer !== null) {
        effects.push({ kind: 'send', to: answer[1]!, inReplyTo: Number(answer[2]), message: note('answer') });
      }
      if (input.kind === 'timer' && input.name.startsWith('send-')) {
        effects.push({ kind: 'send', to: sends[Number(input.name.slice(5))]!.to, message: note('news') });
      }
      return { state: [...state, input], effects };
    },
  };
}

/** A task that asks the worker once, at its first start only (a relaunched process asks nothing). */
function task(starts: { count: number }): Machine<Input[]> {
  return {
    step(state, input) {
      const effects: Effect[] =
        input.kind === 'start' && starts.count++ === 0
          ? [{ kind: 'send', to: 'w', requestId: 1, message: note('ask') }]
          : [];
      return { state: [...state, input], effects };
    },
  };
}

function world(model: TransportModel, sends: readonly { at: number; to: NodeId }[] = []): World {
  const w = new World({ seed: 1 });
  w.modelTransport(model);
  w.addNode({
    id: 'w',
    role: 'worker',
    principal: { kind: 'server' },
    machine: server(sends),
    initialState: () => [],
  });
  const starts = { count: 0 };
  w.addNode({
    id: TASK,
    role: 'map',
    addressless: true,
    principal: APP_A,
    machine: task(starts),
    initialState: () => [],
  });
  w.addNode({
    id: 'other',
    role: 'map',
    addressless: true,
    principal: APP_A,
    machine: task({ count: 0 }),
    initialState: () => [],
  });
  // A master that knows application a's secret: the worker asks it when the task's connection claims a
  // (sim/world/handshakes.ts), as a worker asks with GetApplicationSecret.
  w.addNode({
    id: 'master-0',
    role: 'master',
    principal: { kind: 'server' },
    machine: { step: (state) => ({ state, effects: [] }) },
    initialState: () => ({
      durable: { applications: { apps: new Map([['a', { secret: simApplicationSecret('a') }]]) } },
    }),
  });
  w.start('master-0');
  w.start('w');
  return w;
}

const inputs = (w: World, node: NodeId) => w.stateOf(node) as Input[];
const failedSends = (w: World) => inputs(w, 'w').filter((input) => input.kind === 'sendFailed');
const received = (w: World, node: NodeId) => inputs(w, node).filter((input) => input.kind === 'receive');

describe('routes in the simulated transport', () => {
  it('answers a task only on the connection it spoke on: a relaunched task does not get its predecessor’s answer', () => {
    const w = world({ authenticated: false, routeIdleMs: 60_000 });
    w.start(TASK);
    w.schedule(5, 'relaunch the task', (later) => later.relaunch(TASK));
    w.run({ until: 100, maxEvents: 100 });
    assert.equal(received(w, 'w').length, 1, 'the worker heard the request');
    assert.deepEqual(received(w, TASK), [], 'the new process heard nothing');
    assert.equal(failedSends(w).length, 1, 'the worker learnt its answer could not be sent');
  });

  it('forgets the route of a task silent for longer than the idle time, once another node speaks', () => {
    const w = world({ authenticated: false, routeIdleMs: 100 }, [
      { at: 50, to: TASK },
      { at: 300, to: TASK },
    ]);
    w.start(TASK);
    w.schedule(200, 'another task speaks', (later) => later.start('other'));
    w.run({ until: 1_000, maxEvents: 200 });
    const news = received(w, TASK).filter(
      (input) => input.kind === 'receive' && input.envelope.inReplyTo === undefined,
    );
    assert.equal(news.length, 1, 'the message sent while the route lived arrived');
    assert.equal(
      failedSends(w).filter((input) => input.kind === 'sendFailed' && input.to === TASK).length,
      1,
    );
  });

  for (const plantedBug of [undefined, 'speaker-rules-ignored'] as const) {
    it(`${plantedBug === undefined ? 'refuses' : 'with its rules off, lets'} a stranger speak as another application’s task and take its answers`, () => {
      const w = world({
        authenticated: true,
        routeIdleMs: 60_000,
        ...(plantedBug === undefined ? {} : { plantedBug }),
      });
      const captured: Envelope[] = [];
      w.onRouteCapture((_w, _on, via, envelope) => {
        if (via === 'stranger') captured.push(envelope);
      });
      w.start(TASK);
      const forged: Envelope = {
        from: TASK,
        to: 'w',
        fromRelease: w.releaseOf('w'),
        requestId: 7,
        message: note('forged'),
      };
      // As application b, then claiming application a and proving nothing.
      w.schedule(2, 'a stranger speaks as the task', (later) => {
        later.injectVia(
          'w',
          { ...forged, principal: { kind: 'application', appId: 'b' } },
          {
            via: 'stranger',
            incarnation: 0,
            identity: { role: 'client', application: 'b' },
            principal: { kind: 'application', appId: 'b' },
          },
        );
        later.injectVia('w', forged, {
          via: 'stranger',
          incarnation: 0,
          identity: { role: 'client', application: 'a' },
          principal: undefined,
        });
      });
      w.run({ until: 100, maxEvents: 100 });
      const heard = received(w, 'w').length;
      if (plantedBug === undefined) {
        assert.equal(heard, 1, 'only the task’s own request reached the worker');
        assert.deepEqual(received(w, TASK).length, 1, 'the task got its answer');
        assert.deepEqual(captured, []);
      } else {
        assert.equal(heard, 3);
        assert.ok(captured.length > 0, 'answers meant for the task went to the stranger');
        assert.ok(
          captured.every((envelope) => envelope.to === TASK),
          'captured.every((envelope) => envelope.to === TASK)',
        );
      }
    });
  }
});
