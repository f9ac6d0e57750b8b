// Section 8 as far as it shows from outside: the slot-offer padding and connection defaults in effect, the
// estimated-partition-size bounds, and a limit a client can provoke (an oversized request is refused, the node
// stays up).
import { API_V1_SINCE, HARMLESS_POST_BODIES } from '../expectations/endpoints.ts';
import { canonicalValue, CONNECTIONS_KEY, connectionsPerPeerAt, sameValue } from '../expectations/config.ts';
import { atLeast } from '../expectations/releases.ts';
import { confOf, type ConfView } from '../conf-view.ts';
import { request } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, verdict, type RuleSpec } from '../rows.ts';
import { observedConnectionsRow } from './connections.ts';

const SPECS = {
  bounds: {
    ruleId: '8/estimated-partition-size-bounds',
    section: '8',
    title:
      'since 0.4.1 the estimated partition size is bounded by minSize and maxSize (minSize <= initialSize <= maxSize)',
  },
  minWorkers: {
    ruleId: '8/slot-assign-minWorkers',
    section: '8',
    title:
      'since 0.6.0 at least svc.master.slot.assign.minWorkers (default 100) workers are involved in an offer',
  },
  extraSlots: {
    ruleId: '8/slot-assign-extraSlots',
    section: '8',
    title: 'svc.master.slot.assign.extraSlots pads offers: default 100 since 0.6.0, 2 before',
  },
  offers: {
    ruleId: '8/slot-offer-observed',
    section: '8',
    title: 'an offer for few reducers spreads over min(minWorkers, workers) workers',
  },
  connections: {
    ruleId: '8/numConnectionsPerPeer',
    section: '8',
    title:
      'svc.<module>.io.numConnectionsPerPeer defaults to 1 since 0.4.0 (2 before): the master accepts that many connections from each worker',
  },
  oversized: {
    ruleId: '8/oversized-request-refused',
    section: '8',
    title:
      'a request body far over any sane limit (8 MiB) is refused with a 4xx, and the node keeps answering',
  },
} satisfies Record<string, RuleSpec>;

const BYTES: Record<string, number> = { b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };
function bytes(text: string | undefined): number | undefined {
  const match = /^(\d+)\s*([bkmgt]?)b?$/i.exec((text ?? '').trim());
  return match === null ? undefined : Number(match[1]) * (BYTES[(match[2] || 'b').toLowerCase()] ?? 1);
}

function valueRow(release: string, spec: RuleSpec, view: ConfView, key: string, expected: string): RuleRow {
  const shown = view.values.get(key);
  return verdict(
    release,
    spec,
    shown !== undefined && sameValue(shown, expected),
    `${view.evidence}: ${key} ${shown ?? 'not listed'} (expected ${canonicalValue(expected)})`,
  );
}

/**
 * The connections the master sees from a client of this release; where they cannot be observed, the setting the
 * master shows, saying why.
 */
async function connectionsRow(target: Target, view: ConfView | undefined): Promise<RuleRow> {
  const expected = connectionsPerPeerAt(target.release);
  const observed = await observedConnectionsRow(target, SPECS.connections, expected);
  if (typeof observed !== 'string') return observed;
  if (view === undefined)
    return fail(target.release, SPECS.connections, `${observed}; and no configuration shown`);
  const shown = valueRow(target.release, SPECS.connections, view, CONNECTIONS_KEY, String(expected));
  return { ...shown, evidence: `${shown.evidence} (the connections themselves not observed: ${observed})` };
}

export const limitsCheck = async (target: Target): Promise<RuleRow[]> => {
  const release = target.release;
  const rows: RuleRow[] = [];
  let view: ConfView | undefined;
  rows.push(
    ...(await guarded(release, SPECS.bounds, async () => {
      view = await confOf(target, target.masterUrl);
      if (!atLeast(release, '0.4.1'))
        return notApplicable(release, SPECS.bounds, `the bounds arrived in 0.4.1; ${release} is older`);
      const [min, initial, max] = ['minSize', 'initialSize', 'maxSize'].map((k) =>
        view!.values.get(`svc.master.estimatedPartitionSize.${k}`),
      );
      const [a, b, c] = [bytes(min), bytes(initial), bytes(max)];
      const ok = a !== undefined && c !== undefined && a <= c && (b === undefined || (a <= b && b <= c));
      return verdict(
        release,
        SPECS.bounds,
        ok,
        `${view.evidence}: minSize ${min ?? 'not listed'}, initialSize ${initial ?? 'not listed'}, maxSize ${max ?? 'not listed'}`,
      );
    })),
  );
  if (view !== undefined) {
    rows.push(
      atLeast(release, '0.6.0')
        ? valueRow(release, SPECS.minWorkers, view, 'svc.master.slot.assign.minWorkers', '100')
        : notApplicable(release, SPECS.minWorkers, `minWorkers arrived in 0.6.0; ${release} is older`),
    );
    rows.push(
      valueRow(
        release,
        SPECS.extraSlots,
        view,
        'svc.master.slot.assign.extraSlots',
        atLeast(release, '0.6.0') ? '100' : '2',
      ),
    );
  }
  rows.push(...(await guarded(release, SPECS.connections, () => connectionsRow(target, view))));
  rows.push(
    notApplicable(
      release,
      SPECS.offers,
      'observing an offer needs a shuffle registered through the wire protocol; this check reads the settings in effect (rows above), and the admission module runs real shuffles',
    ),
  );
  rows.push(
    ...(await guarded(release, SPECS.oversized, async () => {
      const modern = atLeast(release, API_V1_SINCE);
      const padding = 'x'.repeat(8 * 2 ** 20);
      let refused: string;
      let ok: boolean;
      try {
        const answer = modern
          ? await request(target, target.masterUrl, '/api/v1/workers/exclude', {
              method: 'POST',
              body: JSON.stringify({
                ...(HARMLESS_POST_BODIES['master /api/v1/workers/exclude'] as object),
                padding,
              }),
              contentType: 'application/json',
            })
          : await request(target, target.masterUrl, '/workerInfo', {
              method: 'POST',
              body: padding,
              contentType: 'text/plain',
            });
        refused = answer.evidence;
        ok = answer.status >= 400 && answer.status < 500;
      } catch (error) {
        // A node may answer early and close the connection while the body is still being sent: also a refusal.
        refused = `the node closed the connection during the 8 MiB body (${(error as Error).message})`;
        ok = true;
      }
      const after = await request(target, target.masterUrl, modern ? '/api/v1/workers' : '/workerInfo');
      return verdict(
        release,
        SPECS.oversized,
        ok && after.status === 200,
        `${refused}; then ${after.evidence}`,
      );
    })),
  );
  return rows;
};
