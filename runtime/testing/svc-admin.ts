// `svc admin` run as an operator runs it: the CLI from source in a process of its own, to its end, with whatever it
// printed and its exit code. The environment's SVC_ADMIN_* settings are left out unless the caller passes them, so
// that a developer's shell does not change what a test sees.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../cli/main.ts', import.meta.url));

export interface AdminRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `svc admin <args>` to its end (at most 60 s). */
export function svcAdmin(args: readonly string[], env: Record<string, string> = {}): Promise<AdminRun> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('SVC_ADMIN_')),
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, 'admin', ...args],
      { env: { ...base, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
