import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  environmentVariableRule,
  featureSince,
  isFeatureAvailable,
  masterUrlScheme,
  masterUrlSchemeChange,
  OTHER_CHANGES,
  otherChangesBetween,
  replicationTerms,
  shuffleManagerSupport,
} from './other-changes.ts';
import { compareReleases, KNOWN_RELEASES } from './version.ts';

const knownRelease = fc.constantFrom(...KNOWN_RELEASES);
const RSS_CLASS = 'org.apache.spark.shuffle.svc.RssShuffleManager';
const SPARK_CLASS = 'org.apache.spark.shuffle.svc.SparkShuffleManager';

describe('other changes (contract section 9.3)', () => {
  it('0.3.0: SVC_MASTER_HOST and SVC_MASTER_PORT are removed, naming what replaces them', () => {
    for (const variable of ['SVC_MASTER_HOST', 'SVC_MASTER_PORT']) {
      assert.equal(environmentVariableRule(variable, '0.2.1'), undefined);
      for (const release of ['0.3.0', '0.6.0'] as const) {
        assert.deepEqual(environmentVariableRule(variable, release), {
          status: 'removed',
          removedIn: '0.3.0',
          instead:
            'give the master address as svc://<master-host>:<master-port> (worker start script) or in ' +
            'svc.master.endpoints',
        });
      }
    }
  });

  it('0.3.0: SVC_LOCAL_HOSTNAME applies to master and worker and wins over the properties file', () => {
    assert.equal(environmentVariableRule('SVC_LOCAL_HOSTNAME', '0.2.1'), undefined);
    assert.deepEqual(environmentVariableRule('SVC_LOCAL_HOSTNAME', '0.3.0'), {
      status: 'applies',
      since: '0.3.0',
      roles: ['master', 'worker'],
      overridesPropertiesFile: true,
    });
    assert.equal(environmentVariableRule('HOME', '0.6.0'), undefined);
  });

  it('0.3.0: the master URL scheme changes from rss:// to svc://', () => {
    assert.equal(masterUrlScheme('0.2.0'), 'rss');
    assert.equal(masterUrlScheme('0.2.1'), 'rss');
    assert.equal(masterUrlScheme('0.3.0'), 'svc');
    assert.equal(masterUrlScheme('0.6.0'), 'svc');
    assert.deepEqual(masterUrlSchemeChange(), { release: '0.3.0', before: 'rss', after: 'svc' });
  });

  it('0.3.0: master/slave becomes primary/replica', () => {
    assert.deepEqual(replicationTerms('0.2.1'), { primary: 'master', replica: 'slave' });
    assert.deepEqual(replicationTerms('0.3.0'), { primary: 'primary', replica: 'replica' });
  });

  it('0.3.0 and 0.4.0: the RSS-prefixed shuffle manager class until 0.4.0, SparkShuffleManager from 0.3.0', () => {
    assert.deepEqual(shuffleManagerSupport(RSS_CLASS, '0.2.1'), { supported: true });
    assert.deepEqual(shuffleManagerSupport(RSS_CLASS, '0.3.0'), { supported: true });
    assert.deepEqual(shuffleManagerSupport(SPARK_CLASS, '0.3.0'), { supported: true });
    assert.deepEqual(shuffleManagerSupport(RSS_CLASS, '0.4.0'), {
      supported: false,
      message: `'${RSS_CLASS}' is not supported since 0.4.0; use ${SPARK_CLASS}`,
    });
    assert.deepEqual(shuffleManagerSupport(SPARK_CLASS, '0.2.1'), {
      supported: false,
      message: `'${SPARK_CLASS}' arrived in 0.3.0; a client of 0.2.1 uses RssShuffleManager`,
    });
    assert.deepEqual(shuffleManagerSupport(SPARK_CLASS, '0.6.0'), { supported: true });
  });

  it('a class that is no shuffle manager of svc is refused with the classes of that release', () => {
    assert.deepEqual(shuffleManagerSupport('com.example.Other', '0.3.0'), {
      supported: false,
      message:
        "'com.example.Other' is not a shuffle manager of svc; set the engine's shuffle-manager property to " +
        'RssShuffleManager or SparkShuffleManager',
    });
  });

  it('0.3.1: the names of JVM metrics changed (no mapping given by the contract)', () => {
    assert.deepEqual(
      otherChangesBetween('0.3.0', '0.3.1').map((change) => [change.release, change.kind]),
      [['0.3.1', 'jvm-metric-names-changed']],
    );
  });

  it('0.6.0: /api/v1 and svc-openapi-client arrive (not in 0.3.0)', () => {
    assert.equal(featureSince('api-v1'), '0.6.0');
    assert.equal(featureSince('svc-openapi-client'), '0.6.0');
    for (const release of KNOWN_RELEASES) {
      assert.equal(isFeatureAvailable('api-v1', release), release === '0.6.0');
      assert.equal(isFeatureAvailable('svc-openapi-client', release), release === '0.6.0');
    }
  });

  it('the changes an upgrade crosses', () => {
    assert.deepEqual(
      otherChangesBetween('0.2.1', '0.3.0').map((change) => change.kind),
      [
        'environment-variable-removed',
        'environment-variable-removed',
        'environment-variable-scope',
        'master-url-scheme',
        'replication-terms',
        'shuffle-manager-class-added',
      ],
    );
    assert.deepEqual(
      otherChangesBetween('0.3.2', '0.4.0').map((change) => change.kind),
      ['shuffle-manager-class-removed'],
    );
    assert.deepEqual(otherChangesBetween('0.4.0', '0.5.1'), []);
    assert.equal(otherChangesBetween('0.2.0', '0.6.0').length, OTHER_CHANGES.length);
  });

  it('a release older than the history throws', () => {
    assert.throws(() => masterUrlScheme('0.1.0'), /predates the release history/);
  });

  it('the table is oldest first', () => {
    for (let i = 1; i < OTHER_CHANGES.length; i += 1) {
      assert.ok(
        compareReleases(OTHER_CHANGES[i - 1]!.release, OTHER_CHANGES[i]!.release) <= 0,
        'compareReleases(OTHER_CHANGES[i - 1]!.release, OTHER_CHANGES[i]!.release) <= 0',
      );
    }
  });

  it('property: the changes of consecutive upgrades add up to the changes of the whole upgrade', () => {
    fc.assert(
      fc.property(knownRelease, knownRelease, knownRelease, (a, b, c) => {
        const [from, via, to] = [a, b, c].sort(compareReleases);
        assert.deepEqual(
          [...otherChangesBetween(from!, via!), ...otherChangesBetween(via!, to!)],
          otherChangesBetween(from!, to!),
        );
      }),
    );
  });

  it('property: the master URL scheme is svc exactly from 0.3.0', () => {
    fc.assert(
      fc.property(knownRelease, (release) => {
        assert.equal(masterUrlScheme(release) === 'svc', compareReleases(release, '0.3.0') >= 0);
      }),
    );
  });
});
