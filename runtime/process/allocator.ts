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
 * glibc reads the setting when the process starts, so it cannot be changed from JavaScript: the processes svc
 * starts itself get it in their environment, and a server started without it says so once.
 */
export const MALLOC_MMAP_THRESHOLD_BYTES = 16 * 1024 * 1024;

/** The environment a server process is started with (merged over the caller's; an operator's own value wins). */
export function allocatorEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  if (allocatorTuned(env)) return {};
  return { MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD_BYTES) };
}

/** Whether the environment fixes glibc's mmap threshold (either way glibc reads it). */
export function allocatorTuned(env: NodeJS.ProcessEnv): boolean {
  return (
    env.MALLOC_MMAP_THRESHOLD_ !== undefined ||
    (env.GLIBC_TUNABLES ?? '')
      .split(':')
      .some((tunable) => tunable.startsWith('glibc.malloc.mmap_threshold='))
  );
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
