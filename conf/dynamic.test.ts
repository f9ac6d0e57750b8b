import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { dynamicConfigPath, dynamicView, parseDynamicConfig } from './dynamic.ts';
import { resolveConfig } from './resolve.ts';

const YAML_TEXT = `
- level: SYSTEM
  config:
    svc.quota.user.diskBytesWritten: 10g
    svc.quota.cluster.diskFileCount: 1000000
    svc.tags.tagsExpr: ssd
  tags:
    ssd: [worker-1, worker-2]
- level: TENANT
  tenantId: analytics
  config:
    svc.quota.user.diskBytesWritten: 100g
    svc.quota.user.hdfsFileCount: 5000
  users:
    - name: etl
      config:
        svc.quota.user.diskBytesWritten: 1t
    - name: adhoc
      config: {}
`;

const GIB = 2 ** 30;

describe('dynamic configuration (FS store)', () => {
  const staticConfig = resolveConfig({ fileText: 'svc.quota.user.diskFileCount 42\n' });
  const parsed = parseDynamicConfig(YAML_TEXT, { release: '0.6.0' });

  it('parses the SYSTEM, TENANT and TENANT_USER levels and the tags', () => {
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.config.system.get('svc.quota.user.diskBytesWritten'), 10 * GIB);
    assert.equal(parsed.config.tenants.get('analytics')?.config.get('svc.quota.user.hdfsFileCount'), 5000);
    assert.equal(
      parsed.config.tenants.get('analytics')?.users.get('etl')?.get('svc.quota.user.diskBytesWritten'),
      2 ** 40,
    );
    assert.deepEqual(parsed.config.tags.get('ssd'), ['worker-1', 'worker-2']);
  });

  it('looks a value up TENANT_USER → TENANT → SYSTEM → static', () => {
    const key = 'svc.quota.user.diskBytesWritten';
    const lookup = (tenant?: string, user?: string) =>
      dynamicView(staticConfig, parsed.config, {
        ...(tenant ? { tenant } : {}),
        ...(user ? { user } : {}),
      }).lookup(key);
    assert.deepEqual(lookup('analytics', 'etl'), { value: 2 ** 40, level: 'TENANT_USER' });
    assert.deepEqual(lookup('analytics', 'adhoc'), { value: 100 * GIB, level: 'TENANT' });
    assert.deepEqual(lookup('analytics'), { value: 100 * GIB, level: 'TENANT' });
    assert.deepEqual(lookup('other', 'someone'), { value: 10 * GIB, level: 'SYSTEM' });
    assert.deepEqual(lookup(), { value: 10 * GIB, level: 'SYSTEM' });
    const fileCount = dynamicView(staticConfig, parsed.config, { tenant: 'other' });
    assert.deepEqual(fileCount.lookup('svc.quota.user.diskFileCount'), { value: 42, level: 'static' });
    assert.equal(fileCount.getInt('svc.quota.user.hdfsFileCount'), Number.POSITIVE_INFINITY);
  });

  it('agrees with a reference lookup for any scope', () => {
    const key = 'svc.quota.user.diskBytesWritten';
    fc.assert(
      fc.property(
        fc.constantFrom(undefined, 'analytics', 'other'),
        fc.constantFrom(undefined, 'etl', 'adhoc'),
        (tenant, user) => {
          fc.pre(tenant !== undefined || user === undefined);
          const view = dynamicView(staticConfig, parsed.config, {
            ...(tenant ? { tenant } : {}),
            ...(user ? { user } : {}),
          });
          const tenantConfig = tenant === undefined ? undefined : parsed.config.tenants.get(tenant);
          const expected =
            (user === undefined ? undefined : tenantConfig?.users.get(user)?.get(key)) ??
            tenantConfig?.config.get(key) ??
            parsed.config.system.get(key) ??
            staticConfig.get(key);
          assert.equal(view.getBytes(key), expected);
        },
      ),
    );
  });

  it('accepts the tenant quota names as deprecated alternatives from 0.6.0, as the names in use at 0.5.0', () => {
    const text = '- level: SYSTEM\n  config:\n    svc.quota.tenant.diskBytesWritten: 5g\n';
    const at060 = parseDynamicConfig(text, { release: '0.6.0' });
    assert.equal(at060.config.system.get('svc.quota.user.diskBytesWritten'), 5 * GIB);
    assert.deepEqual(
      at060.problems.map((problem) => problem.code),
      ['deprecated-key'],
    );
    const at050 = parseDynamicConfig(text, { release: '0.5.0' });
    assert.deepEqual(at050.problems, []);
  });

  it('reports bad values, non-dynamic keys and unknown keys with the file line and the level', () => {
    const text = [
      '- level: SYSTEM',
      '  config:',
      '    svc.quota.user.diskBytesWritten: lots',
      '    svc.master.port: 9000',
      '    svc.quota.usr.diskFileCount: 5',
      '- level: TENANT',
      '  config: {}',
    ].join('\n');
    const { config, problems } = parseDynamicConfig(text, { release: '0.6.0', fileName: 'dyn.yaml' });
    assert.deepEqual(
      problems.map((problem) => [
        problem.severity,
        problem.code,
        problem.where.kind === 'dynamic' ? problem.where.line : 0,
      ]),
      [
        ['error', 'invalid-value', 3],
        ['warning', 'unknown-key', 5],
        ['warning', 'not-dynamic', 4],
        ['error', 'syntax', 6],
      ],
    );
    assert.match(problems[1]?.message ?? '', /did you mean svc\.quota\.user\.diskFileCount/);
    // The bad value falls through to the next level rather than being guessed.
    assert.equal(config.system.has('svc.quota.user.diskBytesWritten'), false);
  });

  it('reports a document that is not a list of levels, and invalid YAML', () => {
    assert.equal(parseDynamicConfig('level: SYSTEM\n', { release: '0.6.0' }).problems[0]?.code, 'syntax');
    assert.equal(parseDynamicConfig('- level: [\n', { release: '0.6.0' }).problems[0]?.code, 'syntax');
    assert.deepEqual(parseDynamicConfig('', { release: '0.6.0' }).problems, []);
  });

  it('keeps every digit of whole numbers, so that the reference’s Long.MAX_VALUE reads as unlimited', () => {
    const text = '- level: SYSTEM\n  config:\n    svc.quota.user.diskFileCount: 9223372036854775807\n';
    const { config, problems } = parseDynamicConfig(text, { release: '0.6.0' });
    assert.deepEqual(problems, []);
    assert.equal(config.system.get('svc.quota.user.diskFileCount'), Number.POSITIVE_INFINITY);
  });

  it('does not exist before 0.5.0', () => {
    const { problems } = parseDynamicConfig(YAML_TEXT, { release: '0.4.1' });
    assert.equal(problems[0]?.code, 'dynamic-config-unavailable');
    assert.match(problems[0]?.message ?? '', /arrived in 0\.5\.0/);
  });

  it('a user needs its tenant', () => {
    assert.throws(() => dynamicView(staticConfig, parsed.config, { user: 'etl' }), /needs its tenant/);
  });

  it('finds the store’s file: the configured path, else dynamicConfig.yaml in the configuration directory', () => {
    assert.equal(dynamicConfigPath(resolveConfig(), {}), undefined);
    assert.equal(
      dynamicConfigPath(resolveConfig(), { SVC_CONF_DIR: '/etc/svc/' }),
      '/etc/svc/dynamicConfig.yaml',
    );
    assert.equal(
      dynamicConfigPath(resolveConfig(), { SVC_HOME: '/opt/svc' }),
      '/opt/svc/conf/dynamicConfig.yaml',
    );
    const configured = resolveConfig({ fileText: 'svc.quota.configuration.path /etc/quota.yaml\n' });
    assert.equal(dynamicConfigPath(configured, { SVC_CONF_DIR: '/etc/svc' }), '/etc/quota.yaml');
  });
});
