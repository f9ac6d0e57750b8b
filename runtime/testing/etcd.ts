// Test support: a real etcd on loopback for the tests of runtime/ha/, in a temporary directory that goes with it.
// Tests that need etcd skip with `etcdSkipReason` printed when it cannot run here (never silently).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EtcdProcess, etcdUnavailable, type EtcdProcessOptions } from '../ha/etcd-process.ts';

/** Why the etcd tests skip here, or undefined when etcd runs. */
export const etcdSkipReason: string | undefined = etcdUnavailable();

export interface TestEtcd {
  readonly etcd: EtcdProcess;
  /** Stops etcd and removes its data. */
  readonly close: () => Promise<void>;
}

export async function startTestEtcd(
  name = 'svc-test-etcd',
  options: Pick<EtcdProcessOptions, 'tls' | 'host' | 'namespace'> = {},
): Promise<TestEtcd> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-etcd-'));
  try {
    const etcd = await EtcdProcess.start({ dataDir: path.join(dir, 'data'), name, ...options });
    return {
      etcd,
      close: async () => {
        await etcd.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Why etcdctl cannot run here (undefined: it can): the authentication tests set etcd's users up with it. */
export const etcdctlSkipReason: string | undefined = (() => {
  const probe = spawnSync('etcdctl', ['version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) return undefined;
  return 'etcdctl is not installed: install it with bash scripts/etcd/install.sh (Debian etcd-client; .ci/run runs it)';
})();

export interface EtcdUser {
  readonly name: string;
  readonly password: string;
  /** The user may read and write every key under this prefix, nothing else. */
  readonly prefix: string;
}

/**
 * Turns etcd's authentication on (etcdctl auth enable) with a root user and `user`, who may read and write only
 * under its prefix. `tls`: the files etcdctl connects with when etcd serves TLS and asks for client certificates.
 */
export function enableEtcdAuth(
  etcd: EtcdProcess,
  user: EtcdUser,
  tls?: { readonly caFile: string; readonly certFile: string; readonly keyFile: string },
): void {
  const connection = [
    `--endpoints=${tls === undefined ? 'http' : 'https'}://${etcd.endpoint}`,
    ...(tls === undefined
      ? []
      : [`--cacert=${tls.caFile}`, `--cert=${tls.certFile}`, `--key=${tls.keyFile}`]),
  ];
  const role = `${user.name}-role`;
  const steps = [
    ['user', 'add', 'root', '--new-user-password=root-password', '--interactive=false'],
    ['user', 'add', user.name, `--new-user-password=${user.password}`, '--interactive=false'],
    ['role', 'add', role],
    ['role', 'grant-permission', role, '--prefix=true', 'readwrite', user.prefix],
    ['user', 'grant-role', user.name, role],
    ['auth', 'enable'],
  ];
  for (const step of steps) {
    try {
      execFileSync('etcdctl', [...connection, ...step], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ETCDCTL_API: '3' },
      });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString('utf8') ?? '';
      throw new Error(`etcdctl ${step.join(' ')} failed: ${stderr.trim() || String(error)}`, {
        cause: error,
      });
    }
  }
}
