// A peer that dies owing answers fails them at their sender at once (core/interpreter/unanswered-requests.ts, kept
// by the transport per connection): here a real worker process, stopped (SIGSTOP) with a request written to it and
// then killed (SIGKILL), so that it can neither answer nor close politely. The sender is a transport in this process
// (runtime/testing/auth-probe.ts), which is also where the planted bug 'unanswered-not-failed' is switched on to show
// that the check bites: with it, the sender hears nothing until its own deadline.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { PlantedBug } from '../core/planted-bugs.ts';
import type { Message } from '../core/protocol/messages.ts';
import { LocalCluster } from './cluster/local-cluster.ts';
import { AuthProbe, type ProbeOutcome } from './testing/auth-probe.ts';

const APP = 'app-unanswered';
const ASKER = `map-${APP}-0-0-0`;
const REQUEST: Message = { type: 'DestroySlots', appId: APP, shuffleId: 0, primaryIds: [], replicaIds: [] };
/** The sender's own deadline for the request outstanding at the kill: well above "at once", well below the runner's. */
const SENDER_DEADLINE_MS = 4_000;
/** What "at once" allows on a loaded machine: the kill, the reset, one turn of the event loop. */
const AT_ONCE_MS = 1_500;

describe('requests outstanding at a worker that is killed (real processes)', () => {
  let cluster: LocalCluster | undefined;
  let probe: AuthProbe | undefined;
  let stopped: (() => void) | undefined;
  afterEach(async () => {
    stopped?.(); // never leave a stopped process behind, even when the test failed
    stopped = undefined;
    await probe?.close();
    probe = undefined;
    await cluster?.stop();
    cluster = undefined;
  });

  /** Opens a connection to the worker, stops it, asks once more, kills it: what the second request became, and when. */
  async function outstandingAtKill(
    plantedBug?: PlantedBug,
  ): Promise<{ outcome: ProbeOutcome; afterMs: number }> {
    cluster = await LocalCluster.start({ workers: 1 });
    const worker = cluster.workerIds[0]!;
    const rpc = Number(worker.split(':')[1]);
    probe = new AuthProbe({
      role: 'client',
      nodeId: `executor-${APP}`,
      application: APP,
      ...(plantedBug === undefined ? {} : { plantedBug }),
    });
    const first = await probe.ask(rpc, worker, ASKER, REQUEST, 10_000);
    assert.equal(first.kind, 'reply', `the connection is open and answers: ${JSON.stringify(first)}`);

    const victim = cluster.workers[0]!;
    victim.kill('SIGSTOP');
    stopped = () => victim.kill('SIGCONT');
    // Written on the open connection at once, and never read: the worker is stopped.
    const outstanding = probe.ask(rpc, worker, ASKER, REQUEST, SENDER_DEADLINE_MS);
    const killedAt = performance.now();
    victim.kill('SIGKILL');
    stopped = undefined;
    const outcome = await outstanding;
    return { outcome, afterMs: performance.now() - killedAt };
  }

  it('fails the request at its sender at once (sendFailed), not at its deadline', async () => {
    const { outcome, afterMs } = await outstandingAtKill();
    assert.equal(outcome.kind, 'sendFailed', JSON.stringify(outcome));
    assert.ok(afterMs < AT_ONCE_MS, `the sender heard ${Math.round(afterMs)} ms after the kill`);
  });

  it("with the planted bug 'unanswered-not-failed', the sender hears nothing until its own deadline", async () => {
    const { outcome, afterMs } = await outstandingAtKill('unanswered-not-failed');
    assert.equal(outcome.kind, 'noAnswer', JSON.stringify(outcome));
    assert.ok(afterMs >= AT_ONCE_MS, 'the check above fails with the bug');
  });
});
