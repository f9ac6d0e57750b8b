// Section 3 (and 6) from outside, on workers the suite starts itself against the deployment's master: registered,
// excluded and un-excluded by an operator, decommissioned by an event, stopped by an exit command. The suite never
// excludes, decommissions or stops a worker it did not start.
import { API_V1_SINCE } from '../expectations/endpoints.ts';
import { commandAt, LEGACY_COMMANDS, LEGACY_RENAMES, renameAt } from '../expectations/legacy.ts';
import { atLeast } from '../expectations/releases.ts';
import { excerpt, formBody, request, type Answer } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, type RuleSpec } from '../rows.ts';
import { scratchDir, startServer, workerSettings, type Started } from '../servers.ts';

const SPECS = {
  registered: {
    ruleId: '3/registered',
    section: '3',
    title: 'a worker that joins is registered: the master lists it, the worker says so',
  },
  excluded: {
    ruleId: '3/excluded-and-back',
    section: '3',
    title:
      'an operator excludes a worker (listed as excluded), then removes it from the list (no longer listed)',
  },
  decommission: {
    ruleId: '3/decommission-event',
    section: '3',
    title:
      'a Decommission event sent to the master is accepted, listed while pending, and the idle worker decommissions and exits 0',
  },
  exit: {
    ruleId: '3/exit-immediately',
    section: '3',
    title: 'a worker told to exit IMMEDIATELY answers and its process exits 0',
  },
} satisfies Record<string, RuleSpec>;

interface OwnWorker {
  readonly started: Started;
  readonly id: { host: string; rpcPort: number; pushPort: number; fetchPort: number; replicatePort: number };
  readonly key: string;
}

function idOf(started: Started): OwnWorker {
  const key = String(started.line.node);
  const [host, ...ports] = key.split(':');
  const [rpcPort, pushPort, fetchPort, replicatePort] = ports.map(Number);
  return {
    started,
    key,
    id: {
      host: host!,
      rpcPort: rpcPort!,
      pushPort: pushPort!,
      fetchPort: fetchPort!,
      replicatePort: replicatePort!,
    },
  };
}

/** Polls `probe` until it returns a value, for at most `timeoutMs` (waiting on the node's state, not on time). */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Calls a legacy command of the release (method, parameters and media type as 4.4 says) or its /api/v1 successor. */
async function command(
  target: Target,
  base: string,
  path: '/exclude' | '/sendWorkerEvent' | '/exit',
  params: Record<string, string>,
  api: { path: string; body: unknown },
): Promise<Answer> {
  if (atLeast(target.release, API_V1_SINCE))
    return request(target, base, api.path, {
      method: 'POST',
      body: JSON.stringify(api.body),
      contentType: 'application/json',
    });
  const legacy = LEGACY_COMMANDS.find((c) => c.path === path)!;
  const how = commandAt(legacy, target.release);
  return how.form
    ? request(target, base, path, { method: 'POST', body: formBody(params), contentType: how.mediaType })
    : request(target, base, `${path}?${formBody(params)}`);
}

function succeeded(answer: Answer): boolean {
  if (answer.status !== 200) return false;
  const json = answer.json as { success?: boolean } | undefined;
  return json?.success === true || /^success/m.test(answer.text);
}

/** Whether the master lists the worker in `field` (its /api/v1 field, or the legacy path of the release). */
async function listedAs(
  target: Target,
  field: 'workers' | 'excludedWorkers',
  worker: OwnWorker,
): Promise<{ listed: boolean; evidence: string }> {
  if (atLeast(target.release, API_V1_SINCE)) {
    const answer = await request(target, target.masterUrl, '/api/v1/workers');
    const list = ((answer.json as Record<string, unknown> | undefined)?.[field] ?? []) as {
      host?: string;
      rpcPort?: number;
    }[];
    return {
      listed: list.some((w) => w.rpcPort === worker.id.rpcPort && w.host === worker.id.host),
      evidence: `${answer.evidence} ${field}`,
    };
  }
  const path = field === 'workers' ? '/workerInfo' : renameAt(LEGACY_RENAMES[1]!, target.release).served;
  const answer = await request(target, target.masterUrl, path);
  return { listed: answer.text.includes(String(worker.id.rpcPort)), evidence: answer.evidence };
}

/** Whether the master lists a pending event for the worker (`GET /api/v1/workers/events`, or `/workerEventInfo`). */
async function eventListed(
  target: Target,
  worker: OwnWorker,
): Promise<{ listed: boolean; evidence: string }> {
  if (atLeast(target.release, API_V1_SINCE)) {
    const answer = await request(target, target.masterUrl, '/api/v1/workers/events');
    const events = ((answer.json as { workerEvents?: unknown[] } | undefined)?.workerEvents ?? []) as {
      worker?: { host?: string; rpcPort?: number };
    }[];
    return {
      listed: events.some((e) => e.worker?.rpcPort === worker.id.rpcPort && e.worker.host === worker.id.host),
      evidence: answer.evidence,
    };
  }
  const answer = await request(target, target.masterUrl, '/workerEventInfo');
  return { listed: answer.text.includes(String(worker.id.rpcPort)), evidence: answer.evidence };
}

async function workerSays(
  target: Target,
  worker: OwnWorker,
  field: 'isRegistered',
): Promise<{ value: boolean; evidence: string }> {
  if (atLeast(target.release, API_V1_SINCE)) {
    const answer = await request(target, worker.started.httpUrl, '/api/v1/workers');
    return {
      value: (answer.json as Record<string, unknown> | undefined)?.[field] === true,
      evidence: answer.evidence,
    };
  }
  const answer = await request(target, worker.started.httpUrl, `/${field}`);
  return { value: answer.text.split('\n')[1]?.trim() === 'true', evidence: answer.evidence };
}

async function startOwnWorker(target: Target, dir: string, name: string): Promise<OwnWorker> {
  const started = await startServer(
    target.serverCommand!,
    'worker',
    [target.dataUrl!.replace(/^svc:/, schemeFor(target)), '--release', target.release],
    [
      ...workerSettings(`${dir}/${name}`),
      // Heartbeats every 500 ms, so that an event reaches this worker at once.
      'svc.master.heartbeat.worker.timeout=2s',
    ],
  );
  if (started.kind === 'exited')
    throw new Error(
      `the suite's worker did not start (exit ${started.code}): ${excerpt(started.output, 300)}`,
    );
  const worker = idOf(started);
  await started.server.waitForLine((line) => line.includes('"worker.registered"'));
  return worker;
}

function schemeFor(target: Target): string {
  return atLeast(target.release, '0.3.0') ? 'svc:' : 'rss:';
}

export const statesCheck = async (target: Target): Promise<RuleRow[]> => {
  const release = target.release;
  const all = Object.values(SPECS);
  if (target.serverCommand === undefined || target.dataUrl === undefined)
    return all.map((spec) =>
      notApplicable(
        release,
        spec,
        'needs a worker of the suite’s own: give --data svc://HOST:PORT and a server command',
      ),
    );
  const scratch = scratchDir();
  const own: OwnWorker[] = [];
  const rows: RuleRow[] = [];
  try {
    let first: OwnWorker;
    try {
      first = await startOwnWorker(target, scratch.dir, 'first');
      own.push(first);
    } catch (error) {
      return all.map((spec) => fail(release, spec, (error as Error).message));
    }
    rows.push(
      ...(await guarded(release, SPECS.registered, async () => {
        const master = await until('the master to list the worker', async () => {
          const seen = await listedAs(target, 'workers', first);
          return seen.listed ? seen : undefined;
        });
        const self = await workerSays(target, first, 'isRegistered');
        const evidence = `${master.evidence} lists ${first.key}; ${self.evidence} isRegistered ${self.value}`;
        return self.value
          ? pass(release, SPECS.registered, evidence)
          : fail(release, SPECS.registered, evidence);
      })),
    );
    rows.push(
      ...(await guarded(release, SPECS.excluded, async () => {
        const add = await command(
          target,
          target.masterUrl,
          '/exclude',
          { add: first.key },
          { path: '/api/v1/workers/exclude', body: { add: [first.id], remove: [] } },
        );
        const inList = await listedAs(target, 'excludedWorkers', first);
        const remove = await command(
          target,
          target.masterUrl,
          '/exclude',
          { remove: first.key },
          { path: '/api/v1/workers/exclude', body: { add: [], remove: [first.id] } },
        );
        const after = await listedAs(target, 'excludedWorkers', first);
        const evidence = `${add.evidence} (${excerpt(add.text, 80)}); ${inList.evidence}: listed ${inList.listed}; ${remove.evidence}; ${after.evidence}: listed ${after.listed}`;
        const ok = succeeded(add) && inList.listed && succeeded(remove) && !after.listed;
        return ok ? pass(release, SPECS.excluded, evidence) : fail(release, SPECS.excluded, evidence);
      })),
    );
    rows.push(
      ...(await guarded(release, SPECS.exit, async () => {
        const path = atLeast(release, API_V1_SINCE) ? '' : '/exit';
        const answer =
          path === ''
            ? await request(target, first.started.httpUrl, '/api/v1/workers/exit', {
                method: 'POST',
                body: JSON.stringify({ type: 'IMMEDIATELY' }),
                contentType: 'application/json',
              })
            : await command(
                target,
                first.started.httpUrl,
                '/exit',
                { type: 'IMMEDIATELY' },
                { path: '', body: {} },
              );
        const code = await first.started.server.exited();
        const evidence = `${answer.evidence} (${excerpt(answer.text, 80)}); the worker's process exited ${code}`;
        return succeeded(answer) && code === 0
          ? pass(release, SPECS.exit, evidence)
          : fail(release, SPECS.exit, evidence);
      })),
    );
    rows.push(
      ...(await guarded(release, SPECS.decommission, async () => {
        const second = await startOwnWorker(target, scratch.dir, 'second');
        own.push(second);
        // Frozen, the worker cannot take the event in a heartbeat: it stays pending where the master lists events.
        second.started.server.child.kill('SIGSTOP');
        let sent: Answer;
        let pending: { listed: boolean; evidence: string };
        try {
          sent = await command(
            target,
            target.masterUrl,
            '/sendWorkerEvent',
            { type: 'DECOMMISSION', workers: second.key },
            { path: '/api/v1/workers/events', body: { eventType: 'DECOMMISSION', workers: [second.id] } },
          );
          pending = await eventListed(target, second);
        } finally {
          second.started.server.child.kill('SIGCONT');
        }
        if (!succeeded(sent))
          return fail(release, SPECS.decommission, `${sent.evidence}: ${excerpt(sent.text)}`);
        if (!pending.listed)
          return fail(
            release,
            SPECS.decommission,
            `${sent.evidence}; ${pending.evidence} does not list the event for ${second.key}`,
          );
        const code = await Promise.race([
          second.started.server.exited(),
          new Promise<string>((resolve) =>
            setTimeout(() => resolve('still running after 60 s'), 60_000).unref(),
          ),
        ]);
        const evidence = `${sent.evidence} (${excerpt(sent.text, 80)}); ${pending.evidence} lists it while the worker is frozen; the worker's process exited ${code}`;
        return code === 0
          ? pass(release, SPECS.decommission, evidence)
          : fail(release, SPECS.decommission, evidence);
      })),
    );
  } finally {
    await Promise.all(own.map((w) => w.started.server.stop()));
    scratch.dispose();
  }
  return rows;
};
