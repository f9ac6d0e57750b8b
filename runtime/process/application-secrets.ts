import {
  initialSecretCache,
  lookupCachedSecret,
  MAX_CACHED_SECRETS,
  secretAnswered,
  type SecretCacheConfig,
} from '../../core/handshake/index.ts';
import { DEFAULT_SECRET_MAX_AGE_MS } from '../../core/machines/cached-secrets.ts';
import type { Envelope, Input, NodeId } from '../../core/machines/effects.ts';
import { masterNodeId } from '../../core/protocol/node-ids.ts';
import type { HostedNode } from '../driver/node-host.ts';
import type { ExpectedSecret } from '../transport/authentication.ts';
import type { WireEnvelope } from '../wire/index.ts';

export interface ApplicationSecretsOptions {
  /** The pseudo-node's id: unique per worker (the master routes its answer back by it). */
  readonly id: NodeId;
  readonly send: (envelope: WireEnvelope) => void;
  /** How long to wait for the master's answer (svc.rpc.askTimeout). */
  readonly askTimeoutMs: number;
  /**
   * How long a learnt secret is trusted before the master is asked again (svc.worker.auth.secretCache.expiry; the
   * rule: core/machines/cached-secrets.ts); absent: DEFAULT_SECRET_MAX_AGE_MS.
   */
  readonly expiryMs?: number;
  /** The clock secrets are aged by (ms); absent: Date.now. */
  readonly now?: () => number;
}

/** `unregistered`: the master said it holds no secret for the application (not: it could not be asked). */
type Answer =
  | { readonly kind: 'found'; readonly secret: string }
  | { readonly kind: 'absent'; readonly why: string; readonly unregistered?: boolean };

/**
 * A worker's knowledge of the applications' secrets (svc.auth.enabled), to check a connection that claims an
 * application: a cache, filled by asking the master (GetApplicationSecret, the core's message, answered only to a
 * server) from a pseudo-node of the worker process, one request per application in flight, bounded by
 * svc.rpc.askTimeout. It decides nothing: the master keeps each application's first secret, and the cache's rules
 * (when to ask, what an answer does, which entry goes when it is full) are the core's (core/handshake/secret-cache.ts).
 */
export class ApplicationSecrets implements HostedNode {
  readonly id: NodeId;
  private readonly cache = initialSecretCache();
  private readonly cacheConfig: SecretCacheConfig;
  private readonly inFlight = new Map<string, Promise<Answer>>();
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  private nextRequest = 1;

  constructor(private readonly options: ApplicationSecretsOptions) {
    this.id = options.id;
    this.cacheConfig = {
      maxAgeMs: options.expiryMs ?? DEFAULT_SECRET_MAX_AGE_MS,
      maxEntries: MAX_CACHED_SECRETS,
    };
  }

  /** The secret `appId`'s connections must prove; `fresh`: ask the master even if cached (after a mismatch). */
  async expected(appId: string, fresh: boolean): Promise<ExpectedSecret> {
    const principal = { kind: 'application', appId } as const;
    const lookup = lookupCachedSecret(this.cacheConfig, this.cache, appId, this.now(), fresh);
    if (lookup.kind === 'cached') return { kind: 'secret', secret: lookup.secret, principal, cached: true };
    const answer = await (this.inFlight.get(appId) ?? this.ask(appId));
    if (answer.kind === 'absent') return { kind: 'refused', message: answer.why };
    return { kind: 'secret', secret: answer.secret, principal };
  }

  private ask(appId: string): Promise<Answer> {
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
      secretAnswered(
        this.cacheConfig,
        this.cache,
        appId,
        result.kind === 'found'
          ? result
          : result.unregistered === true
            ? { kind: 'unregistered' }
            : { kind: 'unanswered' },
        this.now(),
      );
    });
    this.options.send({
      from: this.id,
      to: masterNodeId(),
      requestId,
      message: { type: 'GetApplicationSecret', appId },
    });
    return answer;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
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
