/**
 * Polls a state that has no event to wait on (a file system, a gauge, descriptors closed in the background, a
 * management endpoint) until `probe` yields a value (anything but undefined), checking again at each turn of the
 * event loop, or at most every `intervalMs` when given (a poll of a state, never a wait for time); fails with
 * `describe()` after `timeoutMs`. The one polling loop of the tests: each wait names what it waited for.
 */
export async function pollFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  describe: () => string,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${describe()}`);
    await new Promise((resolve) =>
      options.intervalMs === undefined ? setImmediate(resolve) : setTimeout(resolve, options.intervalMs),
    );
  }
}

/** pollFor for a condition: resolves once `done` holds. */
export async function pollUntil(
  done: () => boolean | Promise<boolean>,
  describe: () => string,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {},
): Promise<void> {
  await pollFor(async () => ((await done()) ? true : undefined), describe, options);
}
