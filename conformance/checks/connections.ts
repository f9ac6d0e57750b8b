// Rule 8 `numConnectionsPerPeer` as a server sees it: every worker of the deployment keeps the release's default
// number of connections to the master (2 before 0.4.0, 1 since), and the master counts the connections it accepted
// on its rpc port itself (ActiveConnectionCount), so that a master holding none but its workers' holds
// WorkerCount × that number.
import { DEFAULT_METRICS_PATH } from '../expectations/metrics.ts';
import { request } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { verdict, type RuleSpec } from '../rows.ts';

const CONNECTIONS = 'metrics_ActiveConnectionCount_Value{service="rpc"}';
const WORKERS = 'metrics_WorkerCount_Value';
/** How long connections closed by an earlier client may take to leave the master's count. */
const SETTLE_MS = 5_000;

/** The value of the first series of metric `name` in `text` (with `label` among its labels, when given). */
function valueOf(text: string, name: string, label?: string): number | undefined {
  const line = text
    .split('\n')
    .find(
      (l) =>
        (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && (label === undefined || l.includes(label)),
    );
  const value = line === undefined ? undefined : Number(line.trim().split(/\s+/).at(-1));
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/**
 * The row from the connections the master sees, or why they cannot be observed (no metrics, no connection gauge, no
 * worker registered): the caller then falls back to the setting the master shows.
 */
export async function observedConnectionsRow(
  target: Target,
  spec: RuleSpec,
  perPeer: number,
): Promise<RuleRow | string> {
  // A client of an earlier check may still be closing its connections: the count is read until it settles.
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const answer = await request(target, target.masterUrl, target.metricsPath ?? DEFAULT_METRICS_PATH);
    if (answer.status !== 200) return `${answer.evidence}: no metrics`;
    const connections = valueOf(answer.text, 'metrics_ActiveConnectionCount_Value', 'service="rpc"');
    const workers = valueOf(answer.text, WORKERS);
    if (connections === undefined) return `${answer.evidence}: no ${CONNECTIONS}`;
    if (workers === undefined || workers === 0)
      return `${answer.evidence}: no worker registered (${WORKERS})`;
    if (connections !== workers * perPeer && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    return verdict(
      target.release,
      spec,
      connections === workers * perPeer,
      `${answer.evidence}: ${CONNECTIONS} ${connections} with ${WORKERS} ${workers} (expected ${perPeer} per ` +
        'worker, and no client connected during the check)',
    );
  }
}
