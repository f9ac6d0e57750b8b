import { DEFAULT_WAIT_MS } from '../cluster/server-process.ts';

/** A wait of a test that did not end within its deadline; the message names what was awaited. */
export class WaitTimedOutError extends Error {
  override readonly name = 'WaitTimedOutError';
}

/**
 * Resolves as `promise` does, or rejects with WaitTimedOutError naming `what` after `timeoutMs`: a test waiting for
 * an event (a log line, a close, an exit) fails within its own short deadline when the event never comes, instead
 * of hanging to the runner's global timeout.
 */
export function within<T>(promise: Promise<T>, what: string, timeoutMs = DEFAULT_WAIT_MS): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new WaitTimedOutError(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
