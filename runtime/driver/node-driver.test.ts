import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Effect, Input } from '../../core/machines/effects.ts';
import type { Machine } from '../../core/machines/machine.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { createLogger } from '../log.ts';
import type { DurableStore } from '../storage/durable-store.ts';
import { NodeDriver, NodeStoppedError } from './node-driver.ts';
import { within } from '../testing/deadline.ts';

/** Answers `exit now` after its exit effect (as a machine must not), and anything else with a reply. */
const machine: Machine<null> = {
  step(state, input: Input) {
    if (input.kind !== 'admin') return { state, effects: [] };
    const effects: Effect[] =
      input.command.type === 'exit'
        ? [
            { kind: 'exit', code: 0, reason: 'asked' },
            { kind: 'adminReply', commandId: input.commandId, success: true, message: 'too late' },
          ]
        : [{ kind: 'adminReply', commandId: input.commandId, success: true, message: 'done' }];
    return { state, effects };
  },
};

function driver(): NodeDriver<null> {
  return new NodeDriver('n', machine, null, '0.6.0', {
    send: () => undefined,
    logger: createLogger('silent', {}),
  });
}

describe('NodeDriver admin commands', () => {
  it('resolves with the machine’s answer', async () => {
    const node = driver();
    assert.deepEqual(await node.admin({ type: 'excludeWorkers', add: [], remove: [] }), {
      success: true,
      message: 'done',
    });
  });

  it('rejects a command the node stopped before answering, and any command after it stopped', async () => {
    const node = driver();
    await assert.rejects(node.admin({ type: 'exit', exitType: 'IMMEDIATELY' }), NodeStoppedError);
    assert.ok(node.isStopped, 'node.isStopped');
    await assert.rejects(node.admin({ type: 'excludeWorkers', add: [], remove: [] }), NodeStoppedError);
  });
});

describe('NodeDriver waits when the node stops', () => {
  it('resolves a wait with undefined when the node stops without a reason', async () => {
    const node = driver();
    const waiting = node.until(() => undefined);
    node.stop();
    assert.equal(await within(waiting, 'the wait to end when the node stops'), undefined);
  });

  it('rejects a wait, and every later one, with the reason the node was stopped with', async () => {
    const node = driver();
    const waiting = node.until(() => undefined);
    const reason = new Error('the client was closed');
    node.stop(reason);
    node.stop(); // a later stop without a reason (a task's own cleanup) keeps the first reason
    await assert.rejects(within(waiting, 'the wait to end when the node stops'), (error) => error === reason);
    await assert.rejects(
      node.until(() => undefined),
      (error) => error === reason,
    );
    assert.equal(await node.until(() => 'ready'), 'ready', 'a check that holds still answers');
  });
});

/** A store whose writes resolve (or fail) only when the test says so. */
class DelayingStore implements DurableStore {
  readonly writes: { readonly key: string; readonly value: string | null }[][] = [];
  private readonly settle: { resolve: () => void; reject: (error: Error) => void }[] = [];

  load(): Promise<Map<string, string>> {
    return Promise.resolve(new Map<string, string>());
  }

  write(changes: readonly { readonly key: string; readonly value: string | null }[]): Promise<void> {
    this.writes.push([...changes]);
    return new Promise((resolve, reject) => this.settle.push({ resolve, reject }));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  get inFlight(): number {
    return this.settle.length;
  }

  /** Confirms the oldest write in flight, and lets the driver's continuation run. */
  async confirm(): Promise<void> {
    this.settle.shift()!.resolve();
    await new Promise((resolve) => setImmediate(resolve));
  }

  async fail(): Promise<void> {
    this.settle.shift()!.reject(new Error('disk gone'));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const answer = (text: string): Message => ({ type: 'StatusResponse', status: 'SUCCESS', message: text });

/**
 * Answers every received message with a StatusResponse naming it; a message whose text starts with `persist` is
 * first written to the store, as the master does with a registration.
 */
const echo: Machine<null> = {
  step(state, input: Input) {
    if (input.kind !== 'receive' || input.envelope.message.type !== 'StatusResponse') {
      return { state, effects: [] };
    }
    const text = input.envelope.message.message;
    const effects: Effect[] = [];
    if (text.startsWith('persist'))
      effects.push({ kind: 'persist', store: 'coordination', key: text, value: 'v' });
    effects.push({ kind: 'send', to: 'peer', message: answer(`re ${text}`), inReplyTo: 1 });
    effects.push({ kind: 'log', level: 'info', event: `answered ${text}` });
    return { state, effects };
  },
};

function echoDriver(store: DelayingStore, onExit?: (code: number) => void) {
  const sent: string[] = [];
  const node = new NodeDriver('n', echo, null, '0.6.0', {
    send: (envelope) => sent.push((envelope.message as { message: string }).message),
    logger: createLogger('silent', {}),
    durable: store,
    durableStoreKind: 'coordination',
    ...(onExit === undefined ? {} : { onExit }),
  });
  const receive = (text: string) =>
    node.input({
      kind: 'receive',
      envelope: { from: 'peer', to: 'n', fromRelease: '0.6.0', message: answer(text) },
    });
  return { node, sent, receive };
}

describe('NodeDriver durable before acknowledged', () => {
  it('sends a step’s answer only once the store confirmed the write before it', async () => {
    const store = new DelayingStore();
    const { sent, receive } = echoDriver(store);
    receive('persist a');
    assert.deepEqual(store.writes, [[{ key: 'persist a', value: 'v' }]]);
    assert.deepEqual(sent, [], 'nothing leaves while the write is in flight');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [], 'nor after the event loop turned, while the store has not answered');
    await store.confirm();
    assert.deepEqual(sent, ['re persist a']);
  });

  it('sends the answer of a step without persist at once, inside the input call', () => {
    const store = new DelayingStore();
    const { sent, receive } = echoDriver(store);
    receive('plain');
    assert.deepEqual(sent, ['re plain']);
    assert.equal(store.writes.length, 0);
  });

  it('steps later inputs meanwhile, keeps their effects in order behind the write, and writes their persists together', async () => {
    const store = new DelayingStore();
    const { node, sent, receive } = echoDriver(store);
    receive('persist a');
    receive('plain b');
    receive('persist c');
    receive('persist d');
    receive('plain e');
    assert.equal(store.inFlight, 1, 'one write at a time');
    assert.deepEqual(sent, []);
    assert.equal(node.backlog, 5, 'every input waits for the first write');
    await store.confirm();
    assert.deepEqual(sent, ['re persist a', 're plain b'], 'up to the next persist');
    assert.equal(node.backlog, 3, 'the steps of c, d and e still wait');
    assert.deepEqual(store.writes[1], [
      { key: 'persist c', value: 'v' },
      { key: 'persist d', value: 'v' },
    ]);
    await store.confirm();
    assert.deepEqual(sent, ['re persist a', 're plain b', 're persist c', 're persist d', 're plain e']);
    assert.equal(node.backlog, 0);
    receive('plain f');
    assert.deepEqual(sent.at(-1), 're plain f', 'synchronous again once nothing waits');
  });

  it('drops what waited for a write the store refused, and stops', async () => {
    const store = new DelayingStore();
    const exits: number[] = [];
    const { node, sent, receive } = echoDriver(store, (code) => exits.push(code));
    receive('persist a');
    receive('plain b');
    await store.fail();
    assert.deepEqual(sent, [], 'an answer whose write failed is never sent');
    assert.ok(node.isStopped, 'node.isStopped');
    assert.deepEqual(exits, [1]);
  });

  it('reports a full backlog once, and its draining once', async () => {
    const store = new DelayingStore();
    const reports: [boolean, number][] = [];
    const sent: string[] = [];
    const node = new NodeDriver('n', echo, null, '0.6.0', {
      send: (envelope) => sent.push((envelope.message as { message: string }).message),
      logger: createLogger('silent', {}),
      durable: store,
      inputLimit: 4,
      onInputsFull: (full, backlog) => reports.push([full, backlog]),
    });
    const receive = (text: string) =>
      node.input({
        kind: 'receive',
        envelope: { from: 'peer', to: 'n', fromRelease: '0.6.0', message: answer(text) },
      });
    receive('persist a');
    for (const text of ['b', 'c', 'd', 'e', 'f']) receive(text);
    assert.deepEqual(reports, [[true, 4]]);
    assert.equal(node.backlog, 6, 'inputs past the bound are still taken: only the peers are held back');
    await store.confirm();
    assert.deepEqual(reports, [
      [true, 4],
      [false, 0],
    ]);
    assert.equal(sent.length, 6);
  });
});

describe('NodeDriver order of held effects', () => {
  it('keeps an input that arrives while held effects run behind them', async () => {
    const store = new DelayingStore();
    const sent: string[] = [];
    const node: NodeDriver<null> = new NodeDriver('n', echo, null, '0.6.0', {
      // The first answer's send fails at once, as a send to a peer without a connection may: a new input.
      send: (envelope) => {
        const text = (envelope.message as { message: string }).message;
        sent.push(text);
        if (text === 're persist a') {
          node.input({
            kind: 'receive',
            envelope: { from: 'peer', to: 'n', fromRelease: '0.6.0', message: answer('plain c') },
          });
        }
      },
      logger: createLogger('silent', {}),
      durable: store,
    });
    const receive = (text: string) =>
      node.input({
        kind: 'receive',
        envelope: { from: 'peer', to: 'n', fromRelease: '0.6.0', message: answer(text) },
      });
    receive('persist a');
    receive('plain b');
    await store.confirm();
    assert.deepEqual(sent, ['re persist a', 're plain b', 're plain c']);
  });
});

describe('NodeDriver timers', () => {
  it('delivers a timer no earlier than its time, even when the clock runs behind the event loop’s timers', async () => {
    // A clock at a quarter of real speed: each timeout, measured in real time, ends early by the clock's reading.
    const start = performance.now();
    const clock = () => Math.floor((performance.now() - start) / 4);
    const fired: { at: number; now: number }[] = [];
    let at = 0;
    const timed: Machine<null> = {
      step(state, input: Input, now) {
        if (input.kind === 'start') {
          at = now + 20;
          return { state, effects: [{ kind: 'setTimer', name: 'pause', at }] };
        }
        if (input.kind === 'timer') fired.push({ at, now });
        return { state, effects: [] };
      },
    };
    const node = new NodeDriver('n', timed, null, '0.6.0', {
      send: () => undefined,
      logger: createLogger('silent', {}),
      clock,
    });
    node.start(new Map());
    await within(
      node.until(() => (fired.length > 0 ? true : undefined)),
      'the timer to be delivered',
    );
    node.stop();
    assert.equal(fired.length, 1, 'delivered once');
    assert.ok(fired[0]!.now >= fired[0]!.at, `delivered at ${fired[0]!.now}, not before ${fired[0]!.at}`);
  });
});

describe('NodeDriver timers due when set', () => {
  /** Sets timers `due` and `gone` at time 0 (due at once) on an admin command, cancels `gone`, records what fired. */
  const timing: Machine<readonly string[]> = {
    step(fired, input: Input) {
      if (input.kind === 'timer') return { state: [...fired, input.name], effects: [] };
      if (input.kind !== 'admin') return { state: fired, effects: [] };
      const effects: Effect[] = [
        { kind: 'setTimer', name: 'due', at: 0 },
        { kind: 'setTimer', name: 'gone', at: 0 },
        { kind: 'cancelTimer', name: 'gone' },
        { kind: 'adminReply', commandId: input.commandId, success: true, message: 'set' },
      ];
      return { state: fired, effects };
    },
  };

  function timingDriver(): NodeDriver<readonly string[]> {
    return new NodeDriver('t', timing, [], '0.6.0', {
      send: () => undefined,
      logger: createLogger('silent', {}),
    });
  }

  it('fires a timer due at once in a later turn of the loop, and not one cancelled in the meantime', async () => {
    const node = timingDriver();
    try {
      await node.admin({ type: 'excludeWorkers', add: [], remove: [] });
      const fired = await within(
        node.until((state) => (state.length > 0 ? state : undefined)),
        'the due timer to fire',
      );
      assert.deepEqual(fired, ['due']);
      // Timers due at once fire in the order they were set: had `gone` not been cancelled, it would have by now.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(node.state, ['due']);
    } finally {
      node.stop();
    }
  });

  it('cancels timers due at once when the node stops', async () => {
    const node = timingDriver();
    const set = node.admin({ type: 'excludeWorkers', add: [], remove: [] });
    await set;
    node.stop();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(node.state, []);
  });
});
