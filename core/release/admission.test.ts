import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ADMISSION_HISTORY,
  admitClient,
  oldestAcceptedClient,
  UPGRADE_ORDER,
  UPGRADE_ORDER_TEXT,
} from './admission.ts';
import { compareReleases, KNOWN_RELEASES, type Release } from './version.ts';

const knownRelease = fc.constantFrom(...KNOWN_RELEASES);
/** Any release, including ones the history does not list (0.1.x, 0.7.x, ...). */
const anyRelease = fc
  .tuple(fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 3 }))
  .map(([major, minor, patch]): Release => `${major}.${minor}.${patch}`);
const serverRelease = anyRelease.filter((release) => compareReleases(release, '0.2.0') >= 0);

describe('admission by release (contract section 1, rules 6 and 7)', () => {
  it('rule 7: a 0.2 client works against a 0.3 master/worker, with the same-release advice', () => {
    for (const client of ['0.2.0', '0.2.1'] as const) {
      for (const server of ['0.3.0', '0.3.1', '0.3.2'] as const) {
        const admission = admitClient(server, client);
        assert.equal(admission.admitted, true, `${server} must accept ${client}`);
        assert.ok(
          admission.admitted && admission.advice?.includes('strongly recommended'),
          "admission.admitted && admission.advice?.includes('strongly recommended')",
        );
      }
    }
  });

  it('rule 6: from 0.4.0 on, servers refuse clients older than 0.3.0', () => {
    for (const server of ['0.4.0', '0.4.1', '0.5.0', '0.5.1', '0.6.0'] as const) {
      for (const client of ['0.2.0', '0.2.1'] as const) {
        assert.deepEqual(admitClient(server, client), {
          admitted: false,
          reason: 'client-too-old',
          message:
            `server release ${server} refuses client release ${client}: a server of ${server} accepts clients ` +
            `of 0.3.0 or newer. Upgrade the client to ${server} (upgrade masters and workers first, then clients).`,
        });
      }
      assert.equal(admitClient(server, '0.3.0').admitted, true);
    }
  });

  it('rule 6: the same release everywhere is admitted without advice', () => {
    for (const release of KNOWN_RELEASES) assert.deepEqual(admitClient(release, release), { admitted: true });
  });

  it('an older accepted client gets the recommendation to run the same release', () => {
    assert.deepEqual(admitClient('0.6.0', '0.5.1'), {
      admitted: true,
      advice:
        'client release 0.5.1 is older than server release 0.6.0; using the same release for client, master and ' +
        'worker is strongly recommended in production.',
    });
  });

  it('rule 7: a client newer than its server is refused, naming the upgrade order (our decision)', () => {
    assert.deepEqual(admitClient('0.5.1', '0.6.0'), {
      admitted: false,
      reason: 'client-newer-than-server',
      message:
        'server release 0.5.1 refuses client release 0.6.0: a client may not be newer than its servers ' +
        '(upgrade masters and workers first, then clients). Upgrade the masters and workers to 0.6.0, or run the ' +
        'client at 0.5.1 until they are.',
    });
    assert.equal(admitClient('0.5.0', '0.5.1').admitted, false);
  });

  it('a client older than the history is refused, not guessed at', () => {
    const admission = admitClient('0.3.0', '0.1.9');
    assert.equal(admission.admitted, false);
    assert.ok(
      !admission.admitted && admission.reason === 'client-too-old',
      "!admission.admitted && admission.reason === 'client-too-old'",
    );
  });

  it('a server older than the history has no known policy and throws', () => {
    assert.throws(() => admitClient('0.1.0', '0.1.0'), /0\.1\.0 predates the release history/);
  });

  it('the oldest accepted client by server release', () => {
    assert.deepEqual(
      KNOWN_RELEASES.map((server) => [server, oldestAcceptedClient(server)]),
      [
        ['0.2.0', '0.2.0'],
        ['0.2.1', '0.2.0'],
        ['0.3.0', '0.2.0'],
        ['0.3.1', '0.2.0'],
        ['0.3.2', '0.2.0'],
        ['0.4.0', '0.3.0'],
        ['0.4.1', '0.3.0'],
        ['0.5.0', '0.3.0'],
        ['0.5.1', '0.3.0'],
        ['0.6.0', '0.3.0'],
      ],
    );
  });

  it('the upgrade order: masters and workers, then clients', () => {
    assert.deepEqual(UPGRADE_ORDER, [['master', 'worker'], ['client']]);
    assert.equal(UPGRADE_ORDER_TEXT, 'upgrade masters and workers first, then clients');
  });

  it('the policy table is oldest first and starts at the oldest known release', () => {
    assert.equal(ADMISSION_HISTORY[0].since, KNOWN_RELEASES[0]);
    for (let i = 1; i < ADMISSION_HISTORY.length; i += 1) {
      assert.ok(
        compareReleases(ADMISSION_HISTORY[i - 1]!.since, ADMISSION_HISTORY[i]!.since) < 0,
        'compareReleases(ADMISSION_HISTORY[i - 1]!.since, ADMISSION_HISTORY[i]!.since) < 0',
      );
    }
  });

  it('property: admitted exactly when oldestAcceptedClient(server) <= client <= server', () => {
    fc.assert(
      fc.property(serverRelease, anyRelease, (server, client) => {
        const expected =
          compareReleases(oldestAcceptedClient(server), client) <= 0 && compareReleases(client, server) <= 0;
        assert.equal(admitClient(server, client).admitted, expected);
      }),
      { numRuns: 300 },
    );
  });

  it('property: admission is monotonic in the client release up to the server release', () => {
    fc.assert(
      fc.property(serverRelease, anyRelease, anyRelease, (server, a, b) => {
        const [older, newer] = compareReleases(a, b) <= 0 ? [a, b] : [b, a];
        if (compareReleases(newer, server) <= 0 && admitClient(server, older).admitted) {
          assert.equal(admitClient(server, newer).admitted, true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('property: the oldest accepted client never goes down as the server release goes up', () => {
    fc.assert(
      fc.property(knownRelease, knownRelease, (a, b) => {
        const [older, newer] = compareReleases(a, b) <= 0 ? [a, b] : [b, a];
        assert.ok(
          compareReleases(oldestAcceptedClient(older), oldestAcceptedClient(newer)) <= 0,
          'compareReleases(oldestAcceptedClient(older), oldestAcceptedClient(newer)) <= 0',
        );
      }),
    );
  });

  it('property: every refusal names both releases and the upgrade order; every advice names both releases', () => {
    fc.assert(
      fc.property(serverRelease, anyRelease, (server, client) => {
        const admission = admitClient(server, client);
        const text = admission.admitted ? admission.advice : admission.message;
        if (text === undefined) {
          assert.equal(client, server);
          return;
        }
        assert.ok(text.includes(`server release ${server}`), text);
        assert.ok(text.includes(`client release ${client}`), text);
        if (!admission.admitted) assert.ok(text.includes(UPGRADE_ORDER_TEXT), text);
      }),
      { numRuns: 300 },
    );
  });
});
