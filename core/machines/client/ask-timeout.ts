/**
 * How long one kind of a task's asks to its lifecycle manager waits, and the key that set it: each ask has a key of
 * its own (svc.client.rpc.<request>.askTimeout), whose fallback depends on the client's release, so a task that gives
 * up names the key an operator must change.
 */
export interface AskTimeout {
  readonly ms: number;
  /** The key whose value applies, e.g. `svc.client.rpc.registerShuffle.askTimeout from svc.rpc.askTimeout` (unset, it fell back). */
  readonly key: string;
}

/** A task's ask timeout when its configuration gives none for that ask: the common one (svc.rpc.askTimeout). */
export function askTimeoutOr(timeout: AskTimeout | undefined, requestTimeoutMs: number): AskTimeout {
  return timeout ?? { ms: requestTimeoutMs, key: 'svc.rpc.askTimeout' };
}

/** What a task's failure says of an ask that was never answered: how long each try waited, and which key says so. */
export function unansweredAsk(request: string, attempts: number, why: string, timeout: AskTimeout): string {
  return (
    `the lifecycle manager did not answer ${request} ${attempts} times (${why}; each try waited ` +
    `${timeout.ms} ms, ${timeout.key})`
  );
}
