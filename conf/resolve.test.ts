import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { defaultAt } from '../core/release/config-changes.ts';
import { KNOWN_RELEASES, type Release } from '../core/release/version.ts';
import { ConfigError } from './problems.ts';
import { existsAt } from './registry/history.ts';
import { REGISTRY } from './registry/registry.ts';
import { MODULES } from './registry/spec.ts';
import { resolveConfig, type ResolveOptions } from './resolve.ts';
import { parseValue } from './values.ts';

const anyRelease = fc.constantFrom(...KNOWN_RELEASES);
const file = (...lines: string[]) => `${lines.join('\n')}\n`;
const codes = (options: ResolveOptions) => resolveConfig(options).problems.map((problem) => problem.code);

describe('release-aware defaults', () => {
  it('extraSlots is 2 before 0.6.0 and 100 from 0.6.0; minWorkers exists from 0.6.0 with 100', () => {
    assert.equal(resolveConfig({ release: '0.5.1' }).getInt('svc.master.slot.assign.extraSlots'), 2);
    assert.equal(resolveConfig({ release: '0.6.0' }).getInt('svc.master.slot.assign.extraSlots'), 100);
    assert.equal(resolveConfig({ release: '0.5.1' }).has('svc.master.slot.assign.minWorkers'), false);
    assert.equal(resolveConfig({ release: '0.6.0' }).getInt('svc.master.slot.assign.minWorkers'), 100);
  });

  it('numConnectionsPerPeer is 2 before 0.4.0 and 1 from 0.4.0, for every module', () => {
    for (const module of MODULES) {
      assert.equal(resolveConfig({ release: '0.3.2' }).getInt(`svc.${module}.io.numConnectionsPerPeer`), 2);
      assert.equal(resolveConfig({ release: '0.4.0' }).getInt(`svc.${module}.io.numConnectionsPerPeer`), 1);
    }
  });

  it('replication is on by default before 0.3.0 and off from 0.3.0', () => {
    assert.equal(resolveConfig({ release: '0.2.1' }).getBoolean('svc.client.push.replicate.enabled'), true);
    assert.equal(resolveConfig({ release: '0.3.0' }).getBoolean('svc.client.push.replicate.enabled'), false);
  });

  it('the recovery store is LEVELDB before 0.5.0 and ROCKSDB from 0.5.0', () => {
    const key = 'svc.worker.graceful.shutdown.recoverDbBackend';
    assert.equal(resolveConfig({ release: '0.4.1' }).getString(key), 'LEVELDB');
    assert.equal(resolveConfig({ release: '0.5.0' }).getString(key), 'ROCKSDB');
    assert.equal(resolveConfig({ release: '0.6.0', fileText: `${key} leveldb\n` }).getString(key), 'LEVELDB');
  });

  it('a server presenting an older release runs on its defaults, with later keys at their current values', () => {
    const overrides = { 'svc.worker.storage.maxOpenFiles': '7' };
    const presented = resolveConfig({ release: '0.4.1', role: 'worker', overrides });
    const current = resolveConfig({ role: 'worker', overrides });
    const runs = presented.withLaterKeysFrom(current);
    assert.equal(runs.release, '0.4.1');
    assert.equal(runs.getString('svc.worker.graceful.shutdown.recoverDbBackend'), 'LEVELDB');
    assert.equal(runs.getDouble('svc.worker.directMemoryRatioToResume'), 0.7, 'changed in 0.3.1');
    const older = resolveConfig({ release: '0.3.0', role: 'worker' }).withLaterKeysFrom(current);
    assert.equal(older.getDouble('svc.worker.directMemoryRatioToResume'), 0.5);
    // Introduced in 0.6.0: absent as of 0.4.1, the current resolution (the setting included) stands in.
    assert.equal(presented.has('svc.worker.storage.maxOpenFiles'), false);
    assert.equal(runs.has('svc.worker.storage.maxOpenFiles'), true);
    assert.equal(runs.getInt('svc.worker.storage.maxOpenFiles'), 7);
    assert.deepEqual(runs.problems, presented.problems);
  });

  it('stage rerun: off before 0.6.0 under its old name, on from 0.6.0 under its new one', () => {
    const key = 'svc.client.spark.stageRerun.enabled';
    const old = 'svc.client.spark.fetch.throwsFetchFailure';
    assert.equal(resolveConfig({ release: '0.5.1' }).getBoolean(key), false);
    assert.equal(resolveConfig({ release: '0.6.0' }).getBoolean(key), true);
    // At 0.5.1 the old name is the name in use: no warning.
    const at051 = resolveConfig({ release: '0.5.1', fileText: `${old} true\n` });
    assert.deepEqual(at051.problems, []);
    assert.equal(at051.getBoolean(key), true);
    // The new name means nothing to a 0.5.1 node: ignored, with a warning naming the name it reads.
    const newAt051 = resolveConfig({ release: '0.5.1', fileText: `${key} true\n` });
    assert.equal(newAt051.getBoolean(key), false);
    assert.equal(newAt051.problems[0]?.code, 'not-yet-introduced');
    assert.match(
      newAt051.problems[0]?.message ?? '',
      /at 0\.5\.1 the setting is svc\.client\.spark\.fetch\.throwsFetchFailure/,
    );
    // From 0.6.0 the old name still works, with a deprecation warning.
    const at060 = resolveConfig({ release: '0.6.0', fileText: `${old} false\n` });
    assert.equal(at060.getBoolean(key), false);
    assert.equal(at060.problems[0]?.code, 'deprecated-key');
  });

  it('io.mode is NIO before 0.6.0; from 0.6.0 it is optional: EPOLL when epoll is available, else NIO', () => {
    for (const module of MODULES) {
      const key = `svc.${module}.io.mode`;
      assert.equal(
        resolveConfig({ release: '0.5.1', platform: { epollAvailable: true } }).getString(key),
        'NIO',
      );
      assert.equal(
        resolveConfig({ release: '0.6.0', platform: { epollAvailable: true } }).getString(key),
        'EPOLL',
      );
      assert.equal(
        resolveConfig({ release: '0.6.0', platform: { epollAvailable: false } }).getString(key),
        'NIO',
      );
      const conf = resolveConfig({ release: '0.6.0', platform: { epollAvailable: true } });
      assert.equal(conf.isSet(key), false);
      assert.deepEqual(conf.resolution(key), {
        status: 'value',
        value: 'EPOLL',
        origin: { kind: 'platform' },
      });
    }
  });

  it('the ask timeouts fall back to the rpc module’s connection timeout before 0.4.1, to svc.rpc.askTimeout after', () => {
    const key = 'svc.client.rpc.requestPartition.askTimeout';
    assert.equal(resolveConfig({ release: '0.4.0' }).getDurationMs(key), 240_000);
    assert.equal(resolveConfig({ release: '0.4.1' }).getDurationMs(key), 60_000);
    const text = file('svc.rpc.io.connectionTimeout 100s', 'svc.rpc.askTimeout 30s');
    assert.equal(resolveConfig({ release: '0.4.0', fileText: text }).getDurationMs(key), 100_000);
    assert.equal(resolveConfig({ release: '0.4.1', fileText: text }).getDurationMs(key), 30_000);
    assert.equal(resolveConfig({ release: '0.4.1', fileText: `${key} 5s\n` }).getDurationMs(key), 5000);
  });

  it('the partition-size ceiling is twice the split ceiling unless set, and exists from 0.4.1', () => {
    const key = 'svc.master.estimatedPartitionSize.maxSize';
    assert.equal(resolveConfig().getBytes(key), 4 * 2 ** 30);
    assert.equal(
      resolveConfig({ fileText: 'svc.worker.shuffle.partitionSplit.max 1g\n' }).getBytes(key),
      2 * 2 ** 30,
    );
    assert.equal(resolveConfig({ release: '0.4.0' }).has(key), false);
    assert.throws(() => resolveConfig({ release: '0.4.0' }).getBytes(key), ConfigError);
  });

  it('every key resolves, unset, at every release it exists in, to the table’s default where the table has one', () => {
    fc.assert(
      fc.property(anyRelease, fc.boolean(), (release: Release, epollAvailable) => {
        const conf = resolveConfig({ release, platform: { epollAvailable } });
        for (const entry of REGISTRY.entries) {
          if (entry.pattern !== undefined || !existsAt(entry, release)) continue;
          const value = conf.get(entry.key);
          const rule = defaultAt(entry.template, release);
          if (rule?.kind === 'value') {
            const parsed = parseValue(rule.value, entry);
            assert.ok(parsed.ok, 'parsed.ok');
            assert.deepEqual(value, parsed.value, `${entry.key} at ${release}`);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('reading order and sources', () => {
  it('reads the own name, then older names in order, then the fallback, then the default', () => {
    const key = 'svc.master.http.port';
    const older = 'svc.metrics.master.prometheus.port';
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), (own, alternative) => {
        const lines = [...(alternative ? [`${older} 2000`] : []), ...(own ? [`${key} 1000`] : [])];
        const conf = resolveConfig({ fileText: file(...lines) });
        const expected = own ? 1000 : alternative ? 2000 : 9098;
        assert.equal(conf.getInt(key), expected);
        const shadowed = conf.problems.filter((problem) => problem.code === 'shadowed-key');
        assert.equal(shadowed.length, own && alternative ? 1 : 0);
      }),
    );
  });

  it('a command-line override beats the environment, which beats the file', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), (inFile, inEnv, inOverride) => {
        const conf = resolveConfig({
          role: 'master',
          ...(inFile ? { fileText: 'svc.master.host from-file\n' } : {}),
          ...(inEnv ? { env: { SVC_LOCAL_HOSTNAME: 'from-env' } } : {}),
          ...(inOverride ? { overrides: { 'svc.master.host': 'from-override' } } : {}),
          platform: { localHostname: 'the-host' },
        });
        const expected = inOverride
          ? 'from-override'
          : inEnv
            ? 'from-env'
            : inFile
              ? 'from-file'
              : 'the-host';
        assert.equal(conf.getString('svc.master.host'), expected);
      }),
    );
  });

  it("SVC_LOCAL_HOSTNAME wins over the file's svc.worker.host, as over svc.master.host", () => {
    const conf = resolveConfig({
      role: 'worker',
      fileText: 'svc.worker.host from-file\n',
      env: { SVC_LOCAL_HOSTNAME: 'from-env' },
    });
    assert.equal(conf.getString('svc.worker.host'), 'from-env');
    assert.equal(conf.getString('svc.worker.http.host'), 'from-env');
    const fileOnly = resolveConfig({ role: 'worker', fileText: 'svc.worker.host from-file\n' });
    assert.equal(fileOnly.getString('svc.worker.host'), 'from-file');
  });

  it('SVC_LOCAL_HOSTNAME names the host of masters and workers, not clients', () => {
    const env = { SVC_LOCAL_HOSTNAME: 'node-7' };
    const worker = resolveConfig({ role: 'worker', env, platform: { localHostname: 'os-name' } });
    assert.equal(worker.localHostname, 'node-7');
    assert.equal(worker.getString('svc.worker.host'), 'node-7');
    assert.equal(worker.getString('svc.worker.http.host'), 'node-7');
    assert.deepEqual(worker.getList('svc.master.endpoints'), ['node-7:9097']);
    const client = resolveConfig({ role: 'client', env, platform: { localHostname: 'os-name' } });
    assert.equal(client.localHostname, 'os-name');
  });

  it('refuses SVC_MASTER_HOST and SVC_MASTER_PORT from 0.3.0, saying what replaced them', () => {
    const conf = resolveConfig({ role: 'worker', env: { SVC_MASTER_HOST: 'm', SVC_MASTER_PORT: '9097' } });
    assert.deepEqual(
      conf.errors.map((problem) => problem.subject),
      ['SVC_MASTER_HOST', 'SVC_MASTER_PORT'],
    );
    for (const problem of conf.errors) {
      assert.match(problem.message, /removed in 0\.3\.0/);
      assert.match(problem.message, /svc\.master\.endpoints/);
      assert.match(problem.message, /svc:\/\//);
    }
  });

  it('substitutes ${env:VAR} in values and refuses a variable that is not set', () => {
    const text = 'svc.worker.storage.dirs ${env:DATA}/disk1,${env:DATA}/disk2\n';
    const conf = resolveConfig({ fileText: text, env: { DATA: '/data' } });
    assert.deepEqual(conf.getList('svc.worker.storage.dirs'), ['/data/disk1', '/data/disk2']);
    const missing = resolveConfig({ fileText: text });
    assert.equal(missing.errors[0]?.code, 'invalid-value');
    assert.match(missing.errors[0]?.message ?? '', /DATA, which is not set/);
  });

  it('a key set twice in the file takes the later value and warns about the earlier line', () => {
    const conf = resolveConfig({ fileText: file('svc.master.port 1', 'svc.master.port 2') });
    assert.equal(conf.getInt('svc.master.port'), 2);
    assert.deepEqual(
      conf.problems.map((problem) => [problem.code, problem.where.kind === 'file' ? problem.where.line : 0]),
      [['duplicate-key', 1]],
    );
  });
});

describe('bad input', () => {
  it('an unknown svc.* key warns with the nearest known key, and is ignored', () => {
    const conf = resolveConfig({ fileText: 'svc.master.slot.asign.extraSlots 5\n' });
    assert.equal(conf.getInt('svc.master.slot.assign.extraSlots'), 100);
    assert.equal(conf.problems[0]?.severity, 'warning');
    assert.match(conf.problems[0]?.message ?? '', /did you mean svc\.master\.slot\.assign\.extraSlots\?/);
  });

  it('a key of other software warns that svc reads svc.* keys', () => {
    assert.match(
      resolveConfig({ fileText: 'spark.executor.memory 4g\n' }).problems[0]?.message ?? '',
      /svc reads keys starting with svc\./,
    );
  });

  it('a bad value is an error naming the key, the value and the expected form, and reading it throws', () => {
    const conf = resolveConfig({ fileText: 'svc.worker.flusher.buffer.size 12 parsecs\n' });
    const [problem] = conf.errors;
    assert.equal(problem?.code, 'invalid-value');
    assert.match(problem?.message ?? '', /svc\.worker\.flusher\.buffer\.size/);
    assert.match(problem?.message ?? '', /'12 parsecs'/);
    assert.match(problem?.message ?? '', /expected a byte size/);
    assert.throws(() => conf.getBytes('svc.worker.flusher.buffer.size'), ConfigError);
  });

  it('checks forms beyond the type: endpoints, directories, policies, racks', () => {
    assert.deepEqual(codes({ fileText: 'svc.master.endpoints master-1\n' }), ['invalid-value']);
    assert.deepEqual(codes({ fileText: 'svc.worker.networkLocation rack-1\n' }), ['invalid-value']);
    assert.deepEqual(codes({ fileText: 'svc.worker.networkLocation /dc1/rack-2\n' }), []);
    assert.deepEqual(codes({ fileText: 'svc.worker.storage.dirs /d1:disktype=TAPE\n' }), ['invalid-value']);
    assert.deepEqual(codes({ fileText: 'svc.worker.storage.storagePolicy.evictPolicy MEMORY\n' }), [
      'invalid-value',
    ]);
    assert.deepEqual(
      codes({ fileText: 'svc.worker.storage.dirs /d1:capacity=1t:disktype=ssd:flushthread=4,/d2\n' }),
      [],
    );
  });

  it('translates the boolean forceFallback into a fallback policy and refuses other values', () => {
    const old = 'svc.client.spark.shuffle.forceFallback.enabled';
    const key = 'svc.client.spark.shuffle.fallback.policy';
    assert.equal(resolveConfig({ fileText: `${old} true\n` }).getString(key), 'ALWAYS');
    assert.equal(resolveConfig({ fileText: `${old} false\n` }).getString(key), 'AUTO');
    assert.deepEqual(codes({ fileText: `${old} maybe\n` }), ['deprecated-key', 'invalid-value']);
  });

  it('a key from a later release is ignored with a warning, and reading it says it does not exist yet', () => {
    const conf = resolveConfig({ release: '0.5.0', fileText: 'svc.master.slot.assign.minWorkers 10\n' });
    assert.equal(conf.problems[0]?.code, 'not-yet-introduced');
    assert.match(conf.problems[0]?.message ?? '', /arrived in 0\.6\.0/);
    assert.equal(conf.get('svc.master.slot.assign.minWorkers'), undefined);
    assert.throws(() => conf.getInt('svc.master.slot.assign.minWorkers'), /does not exist before 0\.6\.0/);
  });

  it('reading with the wrong getter is a programming error that names the right one', () => {
    assert.throws(() => resolveConfig().getInt('svc.rpc.askTimeout'), /time key; read it with getDurationMs/);
    assert.throws(() => resolveConfig().getInt('svc.no.such.key'), /not a configuration key of svc/);
  });

  it('an optional key nothing sets reads as undefined, and its typed getter says to set it', () => {
    const conf = resolveConfig();
    assert.equal(conf.get('svc.storage.hdfs.dir'), undefined);
    assert.throws(() => conf.getString('svc.storage.hdfs.dir'), /has no value and no default/);
  });

  it('reads an optional key only where it exists and something sets it, with the getter named', () => {
    const unset = resolveConfig({ release: '0.6.0', role: 'worker' });
    assert.equal(unset.optional('svc.storage.hdfs.dir', 'getString'), undefined, 'nothing sets it');
    const set = resolveConfig({
      release: '0.6.0',
      role: 'worker',
      overrides: {
        'svc.storage.hdfs.dir': '/mnt/dfs',
        'svc.worker.storage.workingDir': '',
        'svc.metrics.extraLabels': 'a=1, ,b=2',
      },
    });
    assert.equal(set.optional('svc.storage.hdfs.dir', 'getString'), '/mnt/dfs');
    assert.equal(set.optional('svc.worker.storage.workingDir', 'getString'), undefined, 'empty is unset');
    assert.deepEqual(set.optional('svc.metrics.extraLabels', 'getList'), ['a=1', 'b=2']);
    // A key of 0.6.0 read by a node resolving as of 0.5.0: absent there, not an error.
    const older = resolveConfig({ release: '0.5.0', role: 'worker' });
    assert.equal(older.has('svc.network.port.maxConnections'), false);
    assert.equal(older.optional('svc.network.port.maxConnections', 'getInt'), undefined);
    assert.equal(
      set.optional('svc.network.port.maxConnections', 'getInt'),
      4096,
      'its default where it exists',
    );
    assert.throws(() => set.optional('svc.storage.hdfs.dir', 'getInt'), /string key; read it with getString/);
  });

  it('refuses a release before the history', () => {
    assert.throws(() => resolveConfig({ release: '0.1.0' }), /predates the release history/);
  });
});

describe('keys with an id', () => {
  it('collects the nodes of a high-availability group under old and new names', () => {
    const conf = resolveConfig({
      release: '0.6.0',
      fileText: file(
        'svc.master.ha.node.1.host m1',
        'svc.ha.master.node.2.host m2',
        'svc.master.ha.node.2.port 9200',
      ),
    });
    assert.deepEqual(conf.instancesOf('svc.master.ha.node.<id>.host'), ['1', '2']);
    assert.equal(conf.getString('svc.master.ha.node.2.host'), 'm2');
    assert.equal(conf.getInt('svc.master.ha.node.2.port'), 9200);
    assert.equal(conf.getInt('svc.master.ha.node.1.port'), 9097);
    assert.deepEqual(
      conf.problems.map((problem) => problem.code),
      ['deprecated-key'],
    );
    // Before 0.3.0 the old namespace is the one in use.
    assert.deepEqual(
      resolveConfig({ release: '0.2.1', fileText: 'svc.ha.master.enabled true\n' }).problems,
      [],
    );
  });
});

describe('show', () => {
  it('lists the keys of a role with their values and origins, secrets hidden', () => {
    const conf = resolveConfig({ role: 'worker', fileText: 'svc.worker.http.port 9200\n' });
    const shown = conf.show();
    assert.ok(
      shown.some((setting) => setting.key === 'svc.worker.http.port' && setting.value === '9200'),
      "shown.some((setting) => setting.key === 'svc.worker.http.port' && setting.value === '9200')",
    );
    assert.ok(
      !shown.some((setting) => setting.key === 'svc.master.slot.assign.policy'),
      "!shown.some((setting) => setting.key === 'svc.master.slot.assign.policy')",
    );
    const keys = shown.map((setting) => setting.key);
    assert.deepEqual(keys, [...keys].sort());
  });
});
