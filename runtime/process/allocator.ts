/**
 * The C allocator a server process should run with (docs/operations.md, "Memory and the allocator").
 *
 * Node allocates every Buffer's bytes with the C library's malloc. glibc serves a large request from its own
 * mapping, returned to the system on free, but each such free raises its "mmap threshold" to the freed size (up to
 * 32 MiB), so that from then on blocks of up to that size come from the heap, where a freed block stays resident
 * until every block above it is freed too. Frames of a few to 32 MiB (partly received frames a worker gives up,
 * bodies that grow as they arrive) then keep the process's resident memory far above what it holds: 1,000 MiB
 * measured for a worker holding 512 MiB under 200 hostile peers, 400-480 MiB with the threshold fixed. Fixing the
 * threshold (setting it disables the adjustment) keeps blocks of 16 MiB and more in mappings of their own; smaller
 * ones, the common frames and chunks, stay on the heap as before.
 *
 * Fixing the threshold also fixes glibc's trim threshold at its default of 128 KiB: every free that leaves more than
 * that at the top of the heap gives it back to the system, and the next frames fault it in again, page by page.
 * Where a page fault is dear (a virtual machine whose host backs its memory lazily: 5 CPU s to first touch 1 GiB
 * measured here) that cost a worker a quarter to two fifths of its CPU per pushed GiB. A trim threshold of 64 MiB
 * keeps that much free heap resident for the next frames (docs/performance.md, "Fresh memory").
 *
 * glibc reads the settings when the process starts, so they cannot be changed from JavaScript: the processes svc
 * starts itself get them in their environment, and a server started without the mmap threshold says so once.
 */
export const MALLOC_MMAP_THRESHOLD_BYTES = 16 * 1024 * 1024;
export const MALLOC_TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024;

/** The environment a server process is started with (merged over the caller's; an operator's own values win). */
export function allocatorEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return {
    ...(allocatorTuned(env) ? {} : { MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD_BYTES) }),
    ...(env.MALLOC_TRIM_THRESHOLD_ !== undefined || tunableSet(env, 'glibc.malloc.trim_threshold')
      ? {}
      : { MALLOC_TRIM_THRESHOLD_: String(MALLOC_TRIM_THRESHOLD_BYTES) }),
  };
}

/** Whether the environment fixes glibc's mmap threshold (either way glibc reads it). */
export function allocatorTuned(env: NodeJS.ProcessEnv): boolean {
  return env.MALLOC_MMAP_THRESHOLD_ !== undefined || tunableSet(env, 'glibc.malloc.mmap_threshold');
}

function tunableSet(env: NodeJS.ProcessEnv, tunable: string): boolean {
  return (env.GLIBC_TUNABLES ?? '').split(':').some((setting) => setting.startsWith(`${tunable}=`));
}

/** Whether this process runs on glibc (Node's diagnostic report names its runtime version only there). */
export function onGlibc(): boolean {
  if (process.platform !== 'linux') return false;
  // Unless told not to, the report names the peer of every socket by a synchronous reverse DNS lookup on the event
  // loop: 5 s and more per address when no name server answers. A master restarted on namespace hosts (a network
  // without DNS) stopped answering for 60-100 s while it looked up the workers that reconnected (chaos --hosts).
  const report = process.report as { excludeNetwork?: boolean };
  const before = report.excludeNetwork;
  report.excludeNetwork = true;
  try {
    const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
    return header?.glibcVersionRuntime !== undefined;
  } finally {
    if (typeof before === 'boolean') report.excludeNetwork = before;
  }
}

/**
 * What a server started on glibc without a fixed threshold should tell its operator; undefined when nothing. The
 * report (onGlibc) is asked only when the environment leaves the threshold alone.
 */
export function allocatorAdvice(env: NodeJS.ProcessEnv = process.env, glibc?: boolean): string | undefined {
  if (allocatorTuned(env) || !(glibc ?? onGlibc())) return undefined;
  return (
    `glibc's malloc keeps freed frames of up to 32 MiB resident unless its mmap threshold is fixed: start this ` +
    `server with MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_BYTES} in its environment (docs/operations.md, ` +
    `"Memory and the allocator"); without it, resident memory under large or abandoned frames may stay far above ` +
    'svc.worker.memory.size'
  );
}
