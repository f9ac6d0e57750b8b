/**
 * Polls a state that has no event to wait on (a file system, a gauge, descriptors closed in the background) until
 * `done` holds, checking again at each turn of the event loop, or at most every `intervalMs` when given (a poll of
 * a state, never a wait for time); fails with `describe()` after `timeoutMs`.
 */
export async function pollUntil(
  done: () => boolean | Promise<boolean>,
  describe: () => string,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${describe()}`);
    await new Promise((resolve) =>
      options.intervalMs === undefined ? setImmediate(resolve) : setTimeout(resolve, options.intervalMs),
    );
  }
}
