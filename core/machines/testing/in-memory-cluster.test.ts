import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Effect, FileRef, Input } from '../effects.ts';
import type { Machine } from '../machine.ts';
import { InMemoryCluster } from './in-memory-cluster.ts';

/** A toy machine: on start it pings `peer` (if any) and arms a timer; it counts what it sees. */
interface Toy {
  readonly peer: string | null;
  readonly seen: readonly string[];
  readonly draws: readonly number[];
  readonly recovered: readonly string[];
}

const toy = (peer: string | null): Toy => ({ peer, seen: [], draws: [], recovered: [] });

const toyMachine: Machine<Toy> = {
  step(state, input, now, rng) {
    const effects: Effect[] = [];
    let seen = [...state.seen];
    switch (input.kind) {
      case 'start':
        if (state.peer !== null) {
          effects.push({ kind: 'send', to: state.peer, message: ping, requestId: 1 });
          effects.push({ kind: 'setTimer', name: 'tick', at: now + 10 });
        }
        return {
          state: { ...state, recovered: [...input.recovered.keys()], seen: [...seen, 'start'] },
          effects,
        };
      case 'receive':
        seen.push(`receive:${input.envelope.message.type}@${now}`);
        if (input.envelope.requestId !== undefined) {
          effects.push({
            kind: 'send',
            to: input.envelope.from,
            message: pong,
            inReplyTo: input.envelope.requestId,
          });
        }
        break;
      case 'timer':
        seen.push(`timer:${input.name}@${now}`);
        break;
      case 'admin':
      case 'ioDone':
      case 'ioFailed':
      case 'ioBatchDone':
      case 'diskSpace':
      case 'sendFailed':
      case 'consumed':
      case 'records':
      case 'recordsEnd':
        seen = [...seen, input.kind];
    }
    return { state: { ...state, seen, draws: [...state.draws, rng.next()] }, effects };
  },
};

const ping = { type: 'GetReducerFileGroup', appId: 'a', shuffleId: 0 } as const;
const pong = { type: 'StatusResponse', status: 'SUCCESS', message: '' } as const;

/** A machine that runs a fixed script of effects on start and records every input after that. */
function scripted(script: readonly Effect[]): {
  machine: Machine<readonly Input[]>;
  init: () => readonly Input[];
} {
  return {
    init: () => [],
    machine: {
      step: (state, input) => ({ state: [...state, input], effects: input.kind === 'start' ? script : [] }),
    },
  };
}

const file: FileRef = { id: 'app-0/0-0-0', tier: 'HDD', mountPoint: '/d1' };
const bytes = (...values: number[]) => new Uint8Array(values);

describe('InMemoryCluster', () => {
  it('delivers requests and replies with the sender release and virtual latency', () => {
    const cluster = new InMemoryCluster({ networkLatency: 5 });
    const a = cluster.addNode('a', { machine: toyMachine, init: () => toy('b'), release: '0.5.1' });
    const b = cluster.addNode('b', { machine: toyMachine, init: () => toy(null) });
    cluster.startAll();
    const result = cluster.run();
    assert.equal(result.end, 'quiescent');
    assert.deepEqual(b.state().seen, ['start', 'receive:GetReducerFileGroup@5']);
    assert.deepEqual(a.state().seen, ['start', 'timer:tick@10', 'receive:StatusResponse@10']);
    const request = cluster.deliveredOf('GetReducerFileGroup')[0];
    assert.equal(request?.fromRelease, '0.5.1');
    assert.equal(request?.requestId, 1);
    assert.equal(cluster.deliveredOf('StatusResponse')[0]?.inReplyTo, 1);
  });

  it('replaces and cancels timers by name', () => {
    const cluster = new InMemoryCluster();
    const node = scripted([
      { kind: 'setTimer', name: 't', at: 50 },
      { kind: 'setTimer', name: 't', at: 20 },
      { kind: 'setTimer', name: 'u', at: 30 },
      { kind: 'cancelTimer', name: 'u' },
    ]);
    const n = cluster.addNode('n', node);
    cluster.start('n');
    cluster.run();
    assert.deepEqual(
      n.state().map((i) => i.kind + (i.kind === 'timer' ? `:${i.name}` : '')),
      ['start', 'timer:t'],
    );
    assert.equal(cluster.now, 20);
  });

  it('executes file effects and completes each with its op', () => {
    const cluster = new InMemoryCluster();
    const moved: FileRef = { ...file, tier: 'SSD', mountPoint: '/s1' };
    const n = cluster.addNode(
      'n',
      scripted([
        { kind: 'createFile', op: 1, file },
        { kind: 'write', op: 2, file, bytes: bytes(1, 2, 3) },
        { kind: 'flush', op: 3, file },
        { kind: 'write', op: 4, file, bytes: bytes(4) },
        { kind: 'read', op: 5, file, offset: 1, length: 10 },
        { kind: 'createFile', op: 6, file },
        { kind: 'moveFile', op: 7, file, to: moved },
        { kind: 'write', op: 8, file: { ...file, id: 'missing' }, bytes: bytes(1) },
      ]),
    );
    cluster.start('n');
    cluster.run();
    const completions = n.state().slice(1);
    assert.deepEqual(
      completions.map((i) =>
        i.kind === 'ioFailed' ? `${i.op}:${i.error}` : i.kind === 'ioDone' ? `${i.op}` : '?',
      ),
      ['1', '2', '3', '4', '5', '6:EXISTS', '7', '8:NOT_FOUND'],
    );
    const read = completions[4];
    assert.ok(read?.kind === 'ioDone', "read?.kind === 'ioDone'");
    assert.deepEqual([...(read.bytes ?? [])], [2, 3, 4]);
    const stored = cluster.files('n').get(file.id);
    assert.equal(stored?.ref.tier, 'SSD');
    assert.deepEqual([...(stored?.bytes ?? [])], [1, 2, 3, 4]);
  });

  it('fails injected I/O and drops injected messages', () => {
    const cluster = new InMemoryCluster();
    const n = cluster.addNode(
      'n',
      scripted([
        { kind: 'createFile', op: 1, file },
        { kind: 'write', op: 2, file, bytes: bytes(1) },
        { kind: 'write', op: 3, file, bytes: bytes(2) },
      ]),
    );
    cluster.failIo(({ effect }) => effect.kind === 'write', 'NO_SPACE');
    cluster.start('n');
    cluster.run();
    assert.deepEqual(
      n
        .state()
        .slice(1)
        .map((i) => i.kind),
      ['ioDone', 'ioFailed', 'ioDone'],
    );
    assert.deepEqual([...(cluster.files('n').get(file.id)?.bytes ?? [])], [2]);

    const net = new InMemoryCluster();
    const b = net.addNode('b', { machine: toyMachine, init: () => toy(null) });
    net.addNode('a', { machine: toyMachine, init: () => toy('b') });
    net.dropMessages((e) => e.message.type === 'GetReducerFileGroup');
    net.startAll();
    net.run();
    assert.deepEqual(b.state().seen, ['start']);
    assert.equal(net.dropped.length, 1);
  });

  it('refuses sends to a node that is down, and a crash keeps only flushed bytes and the durable store', () => {
    const cluster = new InMemoryCluster();
    const a = cluster.addNode('a', { machine: toyMachine, init: () => toy('b') });
    cluster.addNode('b', { machine: toyMachine, init: () => toy(null) });
    cluster.start('a');
    cluster.run();
    assert.ok(a.state().seen.includes('sendFailed'), "a.state().seen.includes('sendFailed')");

    const w = cluster.addNode(
      'w',
      scripted([
        { kind: 'createFile', op: 1, file },
        { kind: 'write', op: 2, file, bytes: bytes(1, 2) },
        { kind: 'flush', op: 3, file },
        { kind: 'write', op: 4, file, bytes: bytes(3) },
        { kind: 'persist', store: 'recovery', key: 'k', value: 'v' },
        { kind: 'persist', store: 'recovery', key: 'gone', value: 'x' },
        { kind: 'persist', store: 'recovery', key: 'gone', value: null },
      ]),
    );
    cluster.start('w');
    cluster.run();
    cluster.crash('w');
    assert.equal(cluster.isUp('w'), false);
    assert.deepEqual([...(cluster.files('w').get(file.id)?.bytes ?? [])], [1, 2]);
    cluster.restart('w');
    cluster.run({ maxEvents: 1 });
    const start = w.state()[0];
    assert.ok(start?.kind === 'start', "start?.kind === 'start'");
    assert.deepEqual([...start.recovered], [['k', 'v']]);
  });

  it('shares the coordination store between masters and stops a node at exit', () => {
    const cluster = new InMemoryCluster();
    cluster.addNode(
      'master-0',
      scripted([
        { kind: 'persist', store: 'coordination', key: 'state', value: '1' },
        { kind: 'exit', code: 3, reason: 'done' },
        { kind: 'persist', store: 'coordination', key: 'after-exit', value: 'never' },
      ]),
    );
    const m1 = cluster.addNode('master-1', scripted([]));
    cluster.start('master-0');
    cluster.run();
    assert.deepEqual(cluster.exits, [{ at: 0, node: 'master-0', code: 3, reason: 'done' }]);
    assert.equal(cluster.isUp('master-0'), false);
    cluster.start('master-1');
    cluster.run();
    const start = m1.state()[0];
    assert.ok(start?.kind === 'start', "start?.kind === 'start'");
    assert.deepEqual([...start.recovered], [['state', '1']]);
  });

  it('stops on a condition, a time limit or an event limit', () => {
    const cluster = new InMemoryCluster();
    const a = cluster.addNode('a', { machine: toyMachine, init: () => toy('b') });
    cluster.addNode('b', { machine: toyMachine, init: () => toy(null) });
    cluster.startAll();
    assert.equal(cluster.run({ maxEvents: 1 }).end, 'event-limit');
    assert.equal(cluster.run({ until: () => a.state().seen.length >= 2 }).end, 'condition');
    const limited = cluster.run({ maxTime: 7 });
    assert.equal(limited.end, 'time-limit');
    assert.equal(limited.now, 7);
    assert.equal(cluster.run().end, 'quiescent');
  });

  it('gives probes what is sent to them', () => {
    const cluster = new InMemoryCluster();
    const probe = cluster.addProbe('probe');
    cluster.addNode('b', { machine: toyMachine, init: () => toy(null) });
    cluster.start('b');
    cluster.inject({ from: 'probe', to: 'b', message: ping, requestId: 9 });
    cluster.run();
    assert.equal(probe.inbox.length, 1);
    assert.equal(probe.inbox[0]?.inReplyTo, 9);
  });

  it('is deterministic: the same seed gives the same draws, another seed different ones', () => {
    const draws = (seed: number) => {
      const cluster = new InMemoryCluster({ seed });
      const a = cluster.addNode('a', { machine: toyMachine, init: () => toy('b') });
      const b = cluster.addNode('b', { machine: toyMachine, init: () => toy(null) });
      cluster.startAll();
      cluster.run();
      return [...a.state().draws, ...b.state().draws];
    };
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        assert.deepEqual(draws(seed), draws(seed));
        for (const d of draws(seed)) assert.ok(d >= 0 && d < 1, 'd >= 0 && d < 1');
      }),
      { numRuns: 50 },
    );
    assert.notDeepEqual(draws(1), draws(2));
  });
});
