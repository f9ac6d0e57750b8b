// Test support: a real etcd on loopback for the tests of runtime/ha/, in a temporary directory that goes with it.
// Tests that need etcd skip with `etcdSkipReason` printed when it cannot run here (never silently).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EtcdProcess, etcdUnavailable } from '../ha/etcd-process.ts';

/** Why the etcd tests skip here, or undefined when etcd runs. */
export const etcdSkipReason: string | undefined = etcdUnavailable();

export interface TestEtcd {
  readonly etcd: EtcdProcess;
  /** Stops etcd and removes its data. */
  readonly close: () => Promise<void>;
}

export async function startTestEtcd(name = 'svc-test-etcd'): Promise<TestEtcd> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-etcd-'));
  try {
    const etcd = await EtcdProcess.start({ dataDir: path.join(dir, 'data'), name });
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
