import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WORKER_STATES } from '../domain/index.ts';
import type { WorkerState } from '../domain/index.ts';
import {
  EXIT_PLANS,
  LIFECYCLE_TRIGGERS,
  STATE_POLICIES,
  TRANSITIONS,
  applyTrigger,
  eventForExitType,
  initialLifecycle,
  isDrained,
  parseExitType,
  parseWorkerEventType,
  transition,
} from './worker-states.ts';
import type { ExitKind, LifecycleTrigger, WorkerHoldings, WorkerLifecycle } from './worker-states.ts';

// -----------------------------------------------------------------------------------------------------------
// The model: an independent, deliberately plain encoding of the lifecycle, written from the reference's
// WorkerStatusManager plus svc's documented changes. Anything not listed as a move or a stay is refused.

const MODEL_MOVES: readonly (readonly [WorkerState, LifecycleTrigger, WorkerState])[] = [
  ['Normal', 'Immediately', 'InExit'],
  ['Normal', 'Decommission', 'InDecommission'],
  ['Normal', 'DecommissionThenIdle', 'InDecommissionThenIdle'],
  ['Normal', 'Graceful', 'InGraceful'],
  ['Idle', 'Immediately', 'InExit'],
  ['Idle', 'Decommission', 'InDecommission'],
  ['Idle', 'Graceful', 'InGraceful'],
  ['Idle', 'Recommission', 'Normal'],
  ['InDecommissionThenIdle', 'Immediately', 'InExit'],
  ['InDecommissionThenIdle', 'Decommission', 'InDecommission'],
  ['InDecommissionThenIdle', 'Graceful', 'InGraceful'],
  ['InDecommissionThenIdle', 'Recommission', 'Normal'],
  ['InDecommissionThenIdle', 'drained', 'Idle'],
  ['InDecommission', 'Immediately', 'InExit'],
  ['InDecommission', 'drained', 'Exit'],
  ['InDecommission', 'drainTimedOut', 'Exit'],
  ['InGraceful', 'Immediately', 'InExit'],
  ['InGraceful', 'drained', 'Exit'],
  ['InGraceful', 'drainTimedOut', 'Exit'],
  ['InExit', 'drained', 'Exit'],
];

const MODEL_STAYS: readonly (readonly [WorkerState, LifecycleTrigger])[] = [
  ['Normal', 'None'],
  ['Idle', 'None'],
  ['InDecommissionThenIdle', 'None'],
  ['InDecommission', 'None'],
  ['InGraceful', 'None'],
  ['InExit', 'None'],
  ['Exit', 'None'],
  ['Normal', 'Recommission'],
  ['Idle', 'DecommissionThenIdle'],
  ['InDecommissionThenIdle', 'DecommissionThenIdle'],
  ['InDecommission', 'Decommission'],
  ['InGraceful', 'Graceful'],
  ['InExit', 'Immediately'],
];

const MODEL_EXIT_KIND_ON_ENTRY: Partial<Record<WorkerState, ExitKind>> = {
  InGraceful: 'GRACEFUL',
  InDecommission: 'DECOMMISSION',
  InExit: 'IMMEDIATELY',
};

type ModelOutcome = { outcome: 'move'; to: WorkerState } | { outcome: 'stay' } | { outcome: 'refuse' };

function modelStep(state: WorkerState, trigger: LifecycleTrigger): ModelOutcome {
  const moveTo = MODEL_MOVES.find(([from, t]) => from === state && t === trigger);
  if (moveTo) return { outcome: 'move', to: moveTo[2] };
  if (MODEL_STAYS.some(([from, t]) => from === state && t === trigger)) return { outcome: 'stay' };
  return { outcome: 'refuse' };
}

/** When the worker may fire `drained`, written plainly. */
function modelDrained(state: WorkerState, holdings: WorkerHoldings): boolean {
  if (state === 'InExit') return true;
  if (state === 'InGraceful') return holdings.partitions === 0;
  if (state === 'InDecommission' || state === 'InDecommissionThenIdle') return holdings.shuffleKeys === 0;
  return false;
}

interface Model {
  state: WorkerState;
  since: number;
  exitKind: ExitKind | null;
  now: number;
}

interface Real {
  lifecycle: WorkerLifecycle;
}

function advance(model: Model, real: Real, trigger: LifecycleTrigger, elapsed: number): void {
  model.now += elapsed;
  const result = applyTrigger(real.lifecycle, trigger, model.now);
  const expected = modelStep(model.state, trigger);
  assert.equal(result.transition.outcome, expected.outcome, `${model.state} × ${trigger}`);
  if (expected.outcome === 'move') {
    assert.deepEqual(result.transition, { outcome: 'move', to: expected.to });
    model.state = expected.to;
    model.since = model.now;
    model.exitKind = MODEL_EXIT_KIND_ON_ENTRY[expected.to] ?? model.exitKind;
  } else {
    assert.equal(result.lifecycle, real.lifecycle, 'a stay or refusal leaves the lifecycle untouched');
  }
  if (result.transition.outcome === 'refuse')
    assert.ok(result.transition.reason.length > 10, 'result.transition.reason.length > 10');
  real.lifecycle = result.lifecycle;

  assert.deepEqual(real.lifecycle, { state: model.state, since: model.since, exitKind: model.exitKind });
  // Only a worker in service takes new reserves and pushes.
  const policy = STATE_POLICIES[model.state];
  assert.equal(policy.reserveRefusal === null, model.state === 'Normal');
  assert.equal(policy.pushRedirect === null, model.state === 'Normal');
  if (model.state === 'Exit') assert.notEqual(model.exitKind, null, 'every exit has a kind');
}

class TriggerCommand implements fc.Command<Model, Real> {
  constructor(
    readonly trigger: LifecycleTrigger,
    readonly elapsed: number,
  ) {}
  check(): boolean {
    return true;
  }
  run(model: Model, real: Real): void {
    advance(model, real, this.trigger, this.elapsed);
  }
  toString(): string {
    return `${this.trigger} +${this.elapsed}`;
  }
}

/** The worker's periodic drain check: fires `drained` exactly when isDrained says the wait is over. */
class DrainCheckCommand implements fc.Command<Model, Real> {
  constructor(
    readonly holdings: WorkerHoldings,
    readonly elapsed: number,
  ) {}
  check(): boolean {
    return true;
  }
  run(model: Model, real: Real): void {
    const drained = isDrained(real.lifecycle.state, this.holdings);
    assert.equal(drained, modelDrained(model.state, this.holdings), `${model.state} drain check`);
    if (drained) advance(model, real, 'drained', this.elapsed);
  }
  toString(): string {
    return `drainCheck(${this.holdings.partitions} partitions, ${this.holdings.shuffleKeys} keys)`;
  }
}

/** A process restart after Exit: the worker comes back in Normal, with no exit kind. */
class RestartCommand implements fc.Command<Model, Real> {
  check(model: Readonly<Model>): boolean {
    return model.state === 'Exit';
  }
  run(model: Model, real: Real): void {
    real.lifecycle = initialLifecycle(model.now);
    Object.assign(model, { state: 'Normal', since: model.now, exitKind: null });
  }
  toString(): string {
    return 'restart';
  }
}

const elapsedArb = fc.integer({ min: 0, max: 10_000 });
const commandsArb = fc.commands(
  [
    fc
      .tuple(fc.constantFrom(...LIFECYCLE_TRIGGERS), elapsedArb)
      .map(([trigger, elapsed]) => new TriggerCommand(trigger, elapsed)),
    fc
      .tuple(fc.nat(2), fc.nat(2), elapsedArb)
      .map(
        ([partitions, shuffleKeys, elapsed]) => new DrainCheckCommand({ partitions, shuffleKeys }, elapsed),
      ),
    fc.constant(new RestartCommand()),
  ],
  { maxCommands: 100, size: 'max' },
);

describe('worker lifecycle: model-based', () => {
  it('follows the plain model of the transition table over any sequence of triggers', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), commandsArb, (start, commands) => {
        const setup = (): { model: Model; real: Real } => ({
          model: { state: 'Normal', since: start, exitKind: null, now: start },
          real: { lifecycle: initialLifecycle(start) },
        });
        fc.modelRun(setup, commands);
      }),
      { numRuns: 300 },
    );
  });
});

describe('worker lifecycle: the table', () => {
  it('has a cell for every state and trigger, and matches the model cell by cell', () => {
    for (const state of WORKER_STATES) {
      for (const trigger of LIFECYCLE_TRIGGERS) {
        const cell = TRANSITIONS[state][trigger];
        assert.equal(cell.outcome, modelStep(state, trigger).outcome, `${state} × ${trigger}`);
      }
    }
  });

  it('lets every state reach Exit and only Exit is terminal', () => {
    const reachesExit = (from: WorkerState): boolean => {
      const seen = new Set<WorkerState>([from]);
      const queue = [from];
      for (let state = queue.shift(); state !== undefined; state = queue.shift()) {
        if (state === 'Exit') return true;
        for (const trigger of LIFECYCLE_TRIGGERS) {
          const cell = transition(state, trigger);
          if (cell.outcome === 'move' && !seen.has(cell.to)) {
            seen.add(cell.to);
            queue.push(cell.to);
          }
        }
      }
      return false;
    };
    for (const state of WORKER_STATES) assert.ok(reachesExit(state), `${state} can reach Exit`);
    for (const trigger of LIFECYCLE_TRIGGERS) assert.notEqual(transition('Exit', trigger).outcome, 'move');
  });

  it('refuses a change of plan once a worker is leaving, and says what the operator can do', () => {
    const refusal = transition('InDecommission', 'Recommission');
    assert.equal(refusal.outcome, 'refuse');
    assert.match(refusal.outcome === 'refuse' ? refusal.reason : '', /send Immediately/);
    assert.deepEqual(transition('InGraceful', 'Immediately'), { outcome: 'move', to: 'InExit' });
  });

  it('gives a graceful exit its kind even when it times out, and an escalation the faster kind', () => {
    let lifecycle = initialLifecycle(0);
    lifecycle = applyTrigger(lifecycle, 'Graceful', 1).lifecycle;
    assert.equal(applyTrigger(lifecycle, 'drainTimedOut', 2).lifecycle.exitKind, 'GRACEFUL');
    lifecycle = applyTrigger(lifecycle, 'Immediately', 3).lifecycle;
    assert.deepEqual(applyTrigger(lifecycle, 'drained', 4).lifecycle, {
      state: 'Exit',
      since: 4,
      exitKind: 'IMMEDIATELY',
    });
  });

  it('keeps committed data only on a graceful exit', () => {
    assert.equal(EXIT_PLANS.GRACEFUL.persistCommittedFileInfos, true);
    assert.equal(EXIT_PLANS.GRACEFUL.deleteShuffleData, false);
    assert.equal(EXIT_PLANS.IMMEDIATELY.deleteShuffleData, true);
    assert.equal(EXIT_PLANS.DECOMMISSION.persistCommittedFileInfos, false);
  });

  it('names a deadline key exactly for the states whose wait is bounded', () => {
    const bounded = WORKER_STATES.filter((state) => STATE_POLICIES[state].drainDeadlineKey !== null);
    assert.deepEqual(bounded, ['InDecommission', 'InGraceful']);
    for (const state of WORKER_STATES) {
      const timesOut = transition(state, 'drainTimedOut').outcome === 'move';
      assert.equal(timesOut, STATE_POLICIES[state].drainDeadlineKey !== null, state);
    }
  });
});

describe('worker lifecycle: documentation', () => {
  it('shows in docs/core/lifecycle.md and docs/core.md exactly the transition table of the code', () => {
    const states = Object.keys(TRANSITIONS) as WorkerState[];
    const cell = (state: WorkerState, trigger: LifecycleTrigger): string => {
      const entry = TRANSITIONS[state][trigger];
      return entry.outcome === 'move' ? `→ ${entry.to}` : entry.outcome;
    };
    const table = [
      `| state \\ trigger | ${LIFECYCLE_TRIGGERS.join(' | ')} |`,
      `| --- | ${LIFECYCLE_TRIGGERS.map(() => '---').join(' | ')} |`,
      ...states.map((state) => `| ${state} | ${LIFECYCLE_TRIGGERS.map((t) => cell(state, t)).join(' | ')} |`),
    ].join('\n');
    for (const page of ['docs/core/lifecycle.md', 'docs/core.md']) {
      const doc = readFileSync(path.join(import.meta.dirname, '../..', page), 'utf8');
      assert.ok(doc.includes(table), `${page} must contain:\n${table}`);
    }
  });
});

describe('exit types and parsing', () => {
  it('maps NONE to the configured default and the others to their events', () => {
    assert.equal(eventForExitType('NONE', { gracefulShutdownEnabled: true }), 'Graceful');
    assert.equal(eventForExitType('NONE', { gracefulShutdownEnabled: false }), 'Immediately');
    assert.equal(eventForExitType('DECOMMISSION', { gracefulShutdownEnabled: true }), 'Decommission');
    assert.equal(eventForExitType('IMMEDIATELY', { gracefulShutdownEnabled: true }), 'Immediately');
  });

  it('parses event and exit types in any case and names the valid values on error', () => {
    assert.equal(parseWorkerEventType('DECOMMISSIONTHENIDLE'), 'DecommissionThenIdle');
    assert.equal(parseWorkerEventType(' Recommission '), 'Recommission');
    assert.equal(parseExitType('graceful'), 'GRACEFUL');
    assert.equal(parseExitType(''), 'NONE');
    assert.throws(
      () => parseWorkerEventType('Restart'),
      /'Restart' is not a worker event type; expected one of None/,
    );
    assert.throws(() => parseExitType('KILL'), /expected one of DECOMMISSION, GRACEFUL, IMMEDIATELY, NONE/);
  });
});
