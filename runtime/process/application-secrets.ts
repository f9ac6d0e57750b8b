import type { Envelope, Input, NodeId } from '../../core/machines/effects.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import type { HostedNode } from '../driver/node-host.ts';
import type { ExpectedSecret } from '../transport/authentication.ts';
import type { WireEnvelope } from '../wire/index.ts';

/** How many applications' secrets a worker keeps; the oldest learnt is forgotten first (and asked again if needed). */
const MAX_CACHED = 10_000;

export interface ApplicationSecretsOptions {
  /** The pseudo-node's id: unique per worker (the master routes its answer back by it). */
  readonly id: NodeId;
  readonly send: (envelope: WireEnvelope) => void;
  /** How long to wait for the master's answer (svc.rpc.askTimeout). */
  readonly askTimeoutMs: number;
  /** How long a learnt secret is trusted before the master is asked again (svc.worker.auth.secretCache.expiry). */
  readonly expiryMs: number;
  /** Monotonic milliseconds (a parameter for tests). */
  readonly now?: () => number;
}

/**
 * Whether a secret learnt from the master at `learntAtMs` may still be trusted at `nowMs` without asking again:
 * younger than the expiry. The one place this is decided (a candidate for core/, with the rest of the worker's
 * policy): after it the master is asked, so that a secret it no longer holds (the application unregistered, or
 * registered again with another) opens no new connection.
 */
export function cachedSecretTrusted(learntAtMs: number, nowMs: number, expiryMs: number): boolean {
  return nowMs - learntAtMs < expiryMs;
}

interface CachedSecret {
  readonly secret: string;
  readonly learntAtMs: number;
}

/** `unregistered`: the master said it holds no secret for the application (not: it could not be asked). */
type Answer =
  | { readonly kind: 'found'; readonly secret: string }
  | { readonly kind: 'absent'; readonly why: string; readonly unregistered?: boolean };

/**
 * A worker's knowledge of the applications' secrets (svc.auth.enabled), to check a connection that claims an
 * application: a cache, filled by asking the master (GetApplicationSecret, the core's message, answered only to a
 * server) from a pseudo-node of the worker process, one request per application in flight, bounded by
 * svc.rpc.askTimeout. An entry is trusted for svc.worker.auth.secretCache.expiry (`cachedSecretTrusted`), and
 * forgotten when the master says the application is not registered. The master keeps each application's first
 * secret (core).
 */
export class ApplicationSecrets implements HostedNode {
  readonly id: NodeId;
  private readonly cache = new Map<string, CachedSecret>();
  private readonly inFlight = new Map<string, Promise<Answer>>();
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  private nextRequest = 1;

  private readonly now: () => number;

  constructor(private readonly options: ApplicationSecretsOptions) {
    this.id = options.id;
    this.now = options.now ?? (() => performance.now());
  }

  /** The secret `appId`'s connections must prove; `fresh`: ask the master even if cached (after a mismatch). */
  async expected(appId: string, fresh: boolean): Promise<ExpectedSecret> {
    const principal = { kind: 'application', appId } as const;
    const cached = this.cache.get(appId);
    if (
      cached !== undefined &&
      !fresh &&
      cachedSecretTrusted(cached.learntAtMs, this.now(), this.options.expiryMs)
    ) {
      return { kind: 'secret', secret: cached.secret, principal, cached: true };
    }
    const answer = await this.ask(appId);
    if (answer.kind === 'absent') return { kind: 'refused', message: answer.why };
    return { kind: 'secret', secret: answer.secret, principal };
  }

  private ask(appId: string): Promise<Answer> {
    const existing = this.inFlight.get(appId);
    if (existing !== undefined) return existing;
    const requestId = this.nextRequest++;
    const answer = new Promise<Answer>((resolve) => {
      const timer = setTimeout(
        () =>
          this.answer(requestId, {
            kind: 'absent',
            why:
              `the master did not say within ${this.options.askTimeoutMs} ms (svc.rpc.askTimeout) whether ` +
              `application ${appId} is registered`,
          }),
        this.options.askTimeoutMs,
      );
      this.waiting.set(requestId, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
    });
    this.inFlight.set(appId, answer);
    void answer.then((result) => {
      this.inFlight.delete(appId);
      if (result.kind === 'found') this.remember(appId, result.secret);
      else if (result.unregistered) this.cache.delete(appId);
    });
    this.options.send({
      from: this.id,
      to: masterNodeId(),
      requestId,
      message: { type: 'GetApplicationSecret', appId },
    });
    return answer;
  }

  private remember(appId: string, secret: string): void {
    this.cache.delete(appId);
    this.cache.set(appId, { secret, learntAtMs: this.now() });
    if (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
  }

  private answer(requestId: number, answer: Answer): void {
    const resolve = this.waiting.get(requestId);
    this.waiting.delete(requestId);
    resolve?.(answer);
  }

  /** The master's answers (only from a server: anyone else could plant a secret), and sends that failed. */
  input(input: Input): void {
    if (input.kind === 'sendFailed' && input.requestId !== undefined) {
      this.answer(input.requestId, {
        kind: 'absent',
        why: 'the worker cannot reach the master to learn the application’s secret',
      });
      return;
    }
    if (input.kind !== 'receive') return;
    const envelope: Envelope = input.envelope;
    const message = envelope.message;
    if (
      envelope.inReplyTo === undefined ||
      envelope.principal?.kind !== 'server' ||
      envelope.from !== masterNodeId()
    ) {
      return;
    }
    if (message.type === 'ApplicationSecretResponse') {
      this.answer(
        envelope.inReplyTo,
        message.found
          ? { kind: 'found', secret: message.secret }
          : {
              kind: 'absent',
              why: `application ${message.appId} is not registered with the master (or registered no secret)`,
              unregistered: true,
            },
      );
    } else if (message.type === 'StatusResponse') {
      this.answer(envelope.inReplyTo, {
        kind: 'absent',
        why: `the master refused to give the application's secret (${message.status}): ${message.message}`,
      });
    }
  }
}
