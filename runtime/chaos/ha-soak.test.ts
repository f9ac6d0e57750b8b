// The chaos soak with a group of masters on namespace hosts (`npm run chaos -- --hosts --ha`), short: its seed draws
// a partition of the leader, a kill and a freeze first, and each must strike the member that leads (its log and its
// GET /api/v1/masters agreeing), be followed by another member's election, and end with the struck member restarted
// by the soak's supervisor and following. Every job verifies, and every check passes: no two masters ever acted as
// leader at once, no registered shuffle was lost across the failovers.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { hostsUnavailableReason } from '../cluster/hosts.ts';
import { etcdSkipReason } from '../testing/etcd.ts';
import { LEADER_FAULT_KINDS } from './schedule.ts';
import { runSoak } from './soak.ts';

const unavailable = etcdSkipReason ?? (await hostsUnavailableReason());
if (unavailable !== undefined) console.log(`# skipping the chaos soak of a master group: ${unavailable}`);

describe(
  'the chaos soak of a group of masters on namespace hosts',
  { skip: unavailable, timeout: 290_000 },
  () => {
    it('strikes the leader with a partition, a kill and a freeze; every job verifies', async (t) => {
      const lines: string[] = [];
      const result = await runSoak({
        // ha-6 draws leader-partition, leader-kill, leader-freeze first (schedule.ts, a pure function of the seed).
        seed: 'ha-6',
        durationMs: 60_000,
        workers: 3,
        apps: 2,
        hosts: true,
        ha: true,
        kinds: LEADER_FAULT_KINDS,
        tiers: ['memory'],
        replicateShare: 1,
        settleMs: [1_000, 3_000],
        print: (line) => lines.push(line),
      });
      try {
        t.diagnostic(lines.filter((line) => / (fault|healed) #|seed ha-6: \d+ jobs/.test(line)).join('\n'));
        assert.deepEqual(result.violations, [], result.report);
        for (const kind of LEADER_FAULT_KINDS) {
          const struck = result.timeline.filter((entry) => entry.fault.kind === kind);
          assert.ok(struck.length > 0, `${kind} struck`);
          for (const entry of struck) {
            // Proven by the members' lines: who led, who led next, and the struck member back following.
            assert.ok(
              entry.notes.some((note) =>
                /^m\d led \(term \d+; its GET \/api\/v1\/masters agreed\)$/.test(note),
              ),
              `${kind}: who led is on the timeline: ${entry.notes.join('; ')}`,
            );
            assert.ok(
              entry.notes.some((note) => /^m\d leads \d+ ms later \(term \d+\)$/.test(note)),
              entry.notes.join('; '),
            );
            assert.ok(
              entry.notes.some((note) => /restarted by its supervisor, (follows|leads)/.test(note)),
              `${kind}: the struck member came back: ${entry.notes.join('; ')}`,
            );
            if (kind !== 'leader-kill')
              assert.ok(
                entry.notes.some((note) => /exited with code 75$/.test(note)),
                entry.notes.join('; '),
              );
          }
        }
        assert.ok(
          result.failovers.length >= LEADER_FAULT_KINDS.length,
          `failovers ${result.failovers.length}`,
        );
        assert.ok(result.jobs.length > 0, 'jobs ran');
        assert.deepEqual(
          result.jobs
            .filter((job) => job.status !== 'verified')
            .map((job) => `${job.spec.index}: ${job.verification}`),
          [],
          'every job verified',
        );
      } finally {
        if (result.keptDir !== undefined) rmSync(result.keptDir, { recursive: true, force: true });
      }
    });
  },
);
