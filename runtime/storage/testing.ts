import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BatchableIo, FileRef, IoCompletion } from '../../core/machines/effects.ts';

/** An I/O effect before its op number is given (tests number them as they run them). */
export type UnnumberedIo = {
  [K in BatchableIo['kind']]: Omit<Extract<BatchableIo, { kind: K }>, 'op'>;
}[BatchableIo['kind']];

/** A fresh directory under the system's temporary directory; remove it with `removeTempRoot` in an after hook. */
export async function makeTempRoot(label: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `svc-storage-${label}-`));
}

export async function removeTempRoot(root: string | undefined): Promise<void> {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
}

/** Creates `root/<name>` and returns its path. */
export async function makeDir(root: string, name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  return dir;
}

export function memoryFile(id: string): FileRef {
  return { id, tier: 'MEMORY', mountPoint: '' };
}

export function diskFile(id: string, mountPoint: string): FileRef {
  return { id, tier: 'HDD', mountPoint };
}

export function dfsFile(id: string, tier: 'HDFS' | 'OSS' | 'S3' = 'HDFS'): FileRef {
  return { id, tier, mountPoint: '' };
}

export function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** The completion as the test expects to compare it: `ok`, `ok:<text read>` or the IoError. */
export function outcome(completion: IoCompletion): string {
  if (completion.kind === 'ioFailed') return completion.error;
  return completion.bytes === undefined ? 'ok' : `ok:${new TextDecoder().decode(completion.bytes)}`;
}
