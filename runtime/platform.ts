import { hostname, tmpdir } from 'node:os';
import type { Platform } from '../conf/index.ts';

/** What conf/ needs to know about this machine, for every process that resolves a configuration. */
export function localPlatform(): Platform {
  return { epollAvailable: process.platform === 'linux', localHostname: hostname(), tmpDir: tmpdir() };
}
