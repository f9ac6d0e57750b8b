// The Kubernetes manifests (deploy/kubernetes/) are validated against the Kubernetes object schemas (kubernetes-models,
// and the Prometheus Operator's for the PodMonitor), and checked for what ties them together: the configuration
// they mount is valid svc configuration, its ports and directories are the ones the pods expose and mount, each pod
// advertises its stable DNS name, and the worker decommissions itself before it stops. No cluster is needed.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { parseAllDocuments } from 'yaml';
import { checkConfigText, resolveConfig } from '../../conf/index.ts';

const DIR = path.resolve(import.meta.dirname, '../../deploy/kubernetes');

interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string };
  readonly [field: string]: unknown;
}

/** The schema of each kind the manifests use; a kind not listed here fails the test, so none goes unchecked. */
const MODELS: Record<string, (manifest: Manifest) => { validate(): void }> = {
  'v1/ConfigMap': (m) => new ConfigMap(m),
  'v1/Service': (m) => new Service(m),
  'apps/v1/StatefulSet': (m) => new StatefulSet(m),
  'monitoring.coreos.com/v1/PodMonitor': (m) => new PodMonitor(m as never),
};

function manifests(): Manifest[] {
  return readdirSync(DIR)
    .filter((name) => name.endsWith('.yaml'))
    .flatMap((name) =>
      parseAllDocuments(readFileSync(path.join(DIR, name), 'utf8')).map((doc) => {
        assert.deepEqual(doc.errors, [], name);
        return doc.toJS() as Manifest;
      }),
    );
}

function find(kind: string, name: string): Manifest {
  const found = manifests().find((m) => m.kind === kind && m.metadata.name === name);
  assert.ok(found !== undefined, `${kind} ${name}`);
  return found;
}

interface Container {
  readonly args: string[];
  readonly env: { name: string; value?: string }[];
  readonly ports: { name: string; containerPort: number }[];
  readonly volumeMounts: { name: string; mountPath: string }[];
  readonly lifecycle?: { preStop?: { exec?: { command: string[] } } };
}

function podOf(set: Manifest): { container: Container; spec: Record<string, unknown> } {
  const spec = (set.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  return { container: (spec.containers as Container[])[0]!, spec };
}

const svcDefaults = (): string =>
  (find('ConfigMap', 'svc-config').data as Record<string, string>)['svc-defaults.conf']!;

describe('the Kubernetes manifests', () => {
  it('validate against the Kubernetes object schemas', () => {
    const all = manifests();
    assert.ok(all.length >= 6, `${all.length} documents`);
    for (const manifest of all) {
      const model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
      assert.ok(model !== undefined, `no schema for ${manifest.apiVersion} ${manifest.kind}`);
      model(manifest).validate();
    }
  });

  it('would fail it with a field of the wrong type (the check can fail)', () => {
    const set = structuredClone(find('StatefulSet', 'svc-worker'));
    (set.spec as Record<string, unknown>).replicas = 'three';
    assert.throws(() => new StatefulSet(set).validate(), /replicas/);
  });

  it('mount configuration svc accepts for both roles, with no key set in vain', () => {
    const report = checkConfigText(svcDefaults(), { fileName: 'svc-defaults.conf' });
    assert.equal(report.errorCount + report.warningCount, 0, report.lines.join('\n'));
    assert.deepEqual(report.withoutEffect, []);
  });

  for (const role of ['master', 'worker'] as const) {
    it(`give the ${role} the ports, directories and stable name its configuration names`, () => {
      const set = find('StatefulSet', `svc-${role}`);
      const { container } = podOf(set);
      assert.deepEqual(container.args, [role]);
      const conf = resolveConfig({ role, fileText: svcDefaults(), env: {} });
      const portKeys: Record<string, string> =
        role === 'master'
          ? { rpc: 'svc.master.port', http: 'svc.master.http.port' }
          : {
              rpc: 'svc.worker.rpc.port',
              push: 'svc.worker.push.port',
              fetch: 'svc.worker.fetch.port',
              replicate: 'svc.worker.replicate.port',
              http: 'svc.worker.http.port',
            };
      const service = find('Service', `svc-${role}`);
      const servicePorts = (service.spec as { ports: { name: string; port: number }[] }).ports;
      for (const [name, key] of Object.entries(portKeys)) {
        const port = conf.getInt(key);
        assert.ok(
          container.ports.some((p) => p.name === name && p.containerPort === port),
          `${role} container port ${name} = ${key} (${port})`,
        );
        assert.ok(
          servicePorts.some((p) => p.name === name && p.port === port),
          `service port ${name}`,
        );
      }
      const dirs =
        role === 'master'
          ? [conf.getString('svc.master.state.dir')]
          : [
              ...conf.getList('svc.worker.storage.dirs').map((entry) => entry.split(':')[0]!),
              conf.getString('svc.worker.graceful.shutdown.recoverPath'),
            ];
      const mounts = container.volumeMounts.map((mount) => mount.mountPath);
      for (const dir of dirs) assert.ok(mounts.includes(dir), `${dir} is a mounted volume`);
      assert.ok(mounts.includes('/etc/svc'), 'the configuration is mounted where the image reads it');
      // The advertised name is the pod's name under the headless Service the StatefulSet is bound to.
      const serviceName = (set.spec as { serviceName: string }).serviceName;
      assert.equal(serviceName, service.metadata.name);
      assert.equal((service.spec as { clusterIP: string }).clusterIP, 'None');
      const hostname = container.env.find((variable) => variable.name === 'SVC_LOCAL_HOSTNAME');
      assert.match(hostname?.value ?? '', new RegExp(`^\\$\\(POD_NAME\\)\\.${serviceName}\\.`));
    });
  }

  it('decommission a worker before it stops, with time for its shuffles to end', () => {
    const set = find('StatefulSet', 'svc-worker');
    const { container, spec } = podOf(set);
    const hook = container.lifecycle?.preStop?.exec?.command.join(' ') ?? '';
    assert.match(hook, /svc admin exit decommission --worker http:\/\/127\.0\.0\.1:9096/);
    assert.match(hook, /while kill -0 1/);
    const conf = resolveConfig({ role: 'worker', fileText: svcDefaults(), env: {} });
    assert.ok(
      (spec.terminationGracePeriodSeconds as number) * 1000 >
        conf.getDurationMs('svc.worker.graceful.shutdown.timeout'),
      'the grace period outlasts a graceful shutdown',
    );
  });

  it('scrape the metrics path svc serves, on a port both roles name', () => {
    const monitor = find('PodMonitor', 'svc');
    const endpoint = (monitor.spec as { podMetricsEndpoints: { port: string; path: string }[] })
      .podMetricsEndpoints[0]!;
    const conf = resolveConfig({ role: 'worker', fileText: svcDefaults(), env: {} });
    assert.equal(endpoint.path, conf.getString('svc.metrics.prometheus.path'));
    for (const role of ['master', 'worker']) {
      const { container } = podOf(find('StatefulSet', `svc-${role}`));
      assert.ok(
        container.ports.some((port) => port.name === endpoint.port),
        `${role} has port ${endpoint.port}`,
      );
    }
  });
});
