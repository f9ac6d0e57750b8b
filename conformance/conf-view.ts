// A node's configuration as it shows it: `GET /api/v1/conf` from 0.6.0, the legacy `GET /conf` before.
import { API_V1_SINCE } from './expectations/endpoints.ts';
import { atLeast } from './expectations/releases.ts';
import { request } from './http.ts';
import type { Target } from './report/row.ts';

export interface ConfView {
  readonly values: ReadonlyMap<string, string>;
  readonly evidence: string;
}

export async function confOf(target: Target, base: string, release = target.release): Promise<ConfView> {
  const modern = atLeast(release, API_V1_SINCE);
  const answer = await request(target, base, modern ? '/api/v1/conf' : '/conf');
  if (answer.status !== 200) throw new Error(`${answer.evidence}: no configuration`);
  const values = new Map<string, string>();
  if (modern) {
    for (const entry of (answer.json as { configs?: { name: string; value: string }[] } | undefined)
      ?.configs ?? [])
      values.set(entry.name, String(entry.value));
  } else {
    for (const line of answer.text.split('\n')) {
      const match = /^(\S+)\s*=\s*(.*)$/.exec(line);
      if (match !== null) values.set(match[1]!, match[2]!.trim());
    }
  }
  return { values, evidence: answer.evidence };
}
