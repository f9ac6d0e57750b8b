import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CONFIG_CHANGES } from '../../core/release/config-changes.ts';
import { KNOWN_RELEASES } from '../../core/release/version.ts';
import { existsAt, nameReadAt, ownNameKnownAt } from './history.ts';
import { editDistance } from './nearest.ts';
import { KEY_GROUPS, REGISTRY, Registry } from './registry.ts';
import { MODULES, type KeySpec } from './spec.ts';

function concrete(key: string): string {
  return key.replace('<module>', MODULES[0]).replace(/<(id|key)>/, 'x1');
}

describe('the registry', () => {
  it('registers every key the contract’s table names, under the name the table gives it', () => {
    for (const row of CONFIG_CHANGES) {
      for (const change of row.changes) {
        const named: string[] = [];
        if ('key' in change) named.push(change.key);
        if (change.kind === 'renamed') named.push(change.newKey);
        if (change.kind === 'deprecated') named.push(change.replacement);
        if (change.kind === 'fallback-changed') named.push(change.from, change.to);
        for (const key of named)
          assert.ok(REGISTRY.lookup(concrete(key)), `${key} (${row.subject}) is not registered`);
        if (change.kind === 'renamed') {
          assert.equal(REGISTRY.lookup(change.key)?.alternative?.how, 'renamed', change.key);
        }
      }
    }
  });

  it('gives a renamed key’s new name the release of the rename, and keeps the setting’s older start', () => {
    const http = REGISTRY.entry('svc.master.http.port').entry;
    assert.equal(http.introducedIn, '0.4.0');
    assert.equal(http.since, '0.2.0');
    assert.equal(ownNameKnownAt(http, '0.3.2'), false);
    assert.equal(existsAt(http, '0.3.2'), true);
    const quota = REGISTRY.entry('svc.quota.user.diskBytesWritten').entry;
    assert.deepEqual([quota.since, quota.introducedIn], ['0.5.0', '0.6.0']);
    const ha = REGISTRY.entry('svc.master.ha.node.7.host');
    assert.equal(ha.instance, '7');
    assert.equal(ha.entry.introducedIn, '0.3.0');
  });

  it('names the key a node of each release reads: the older name before a rename, nothing before the setting', () => {
    const tiers = REGISTRY.entry('svc.storage.availableTypes').entry;
    assert.equal(nameReadAt(tiers, '0.3.2'), 'svc.storage.activeTypes');
    assert.equal(nameReadAt(tiers, '0.4.0'), 'svc.storage.availableTypes');
    const minSize = REGISTRY.entry('svc.master.estimatedPartitionSize.minSize').entry;
    assert.equal(nameReadAt(minSize, '0.4.0'), undefined);
    assert.equal(nameReadAt(minSize, '0.4.1'), minSize.key);
    for (const entry of REGISTRY.entries) {
      for (const release of KNOWN_RELEASES) {
        assert.equal(
          nameReadAt(entry, release) !== undefined,
          existsAt(entry, release),
          `${entry.key} at ${release}`,
        );
      }
    }
  });

  it('every key has a type, at least one role and a one-line description', () => {
    for (const entry of REGISTRY.entries) {
      assert.ok(entry.roles.length > 0, entry.key);
      assert.ok(entry.description.length > 10 && !entry.description.includes('\n'), entry.key);
      assert.ok(
        KNOWN_RELEASES.some((release) => release === entry.since),
        entry.key,
      );
    }
  });

  it('refuses to state what the table states: a default, an introduction, a fallback', () => {
    const spec = (extra: Partial<KeySpec>): KeySpec => ({
      key: 'svc.master.slot.assign.extraSlots',
      type: 'int',
      roles: ['master'],
      description: 'spare workers',
      ...extra,
    });
    assert.throws(() => new Registry([spec({ default: '2' })]), /states its default/);
    assert.throws(
      () => new Registry([spec({ key: 'svc.master.slot.assign.minWorkers', default: '100' })]),
      /introduces it/,
    );
    assert.throws(
      () =>
        new Registry([
          spec({
            key: 'svc.client.rpc.registerShuffle.askTimeout',
            type: 'time',
            fallback: 'svc.rpc.askTimeout',
          }),
        ]),
      /states its fallback/,
    );
    assert.throws(() => new Registry([spec({}), spec({})]), /registered twice/);
    assert.throws(
      () => new Registry([spec({ key: 'svc.a.key', translateFrom: { 'svc.b.key': { true: 'X' } } })]),
      /not one of its older names/,
    );
  });

  it('expands <module> keys to one key per module, documented once', () => {
    const modes = REGISTRY.entries.filter((entry) => entry.template === 'svc.<module>.io.mode');
    assert.deepEqual(
      modes.map((entry) => entry.key),
      MODULES.map((module) => `svc.${module}.io.mode`),
    );
    const documented = KEY_GROUPS.flatMap((group) => group.specs).filter(
      (spec) => spec.key === 'svc.<module>.io.mode',
    );
    assert.equal(documented.length, 1);
  });

  it('suggests, for a misspelt key, a key at least as close as the one that was meant', () => {
    const keys = REGISTRY.entries.filter((entry) => entry.pattern === undefined).map((entry) => entry.key);
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.nat(), fc.constantFrom('x', 'q', ''), (key, at, typo) => {
        const position = at % key.length;
        const misspelt = key.slice(0, position) + typo + key.slice(position + 1);
        fc.pre(misspelt !== key);
        const nearest = REGISTRY.nearest(misspelt);
        assert.ok(nearest !== undefined, misspelt);
        assert.ok(editDistance(misspelt, nearest) <= editDistance(misspelt, key), `${misspelt} → ${nearest}`);
      }),
      { numRuns: 100 },
    );
    assert.equal(REGISTRY.nearest('completely.unrelated'), undefined);
  });
});

describe('edit distance', () => {
  it('is a metric: zero only for equal strings, symmetric, and within the triangle inequality', () => {
    const word = fc.string({ maxLength: 12 });
    fc.assert(
      fc.property(word, word, word, (a, b, c) => {
        assert.equal(editDistance(a, b) === 0, a === b);
        assert.equal(editDistance(a, b), editDistance(b, a));
        assert.ok(
          editDistance(a, c) <= editDistance(a, b) + editDistance(b, c),
          'editDistance(a, c) <= editDistance(a, b) + editDistance(b, c)',
        );
      }),
    );
    assert.equal(editDistance('kitten', 'sitting'), 3);
  });
});
