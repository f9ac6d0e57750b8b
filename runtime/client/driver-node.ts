import type { Input } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';
import type { HostedNode } from '../driver/node-host.ts';
import type { WireEnvelope } from '../wire/index.ts';
import { RequestFailedError, SvcClientError } from './errors.ts';

export interface DriverNodeOptions {
  /** Hands an envelope to the transport; a send that fails comes back as a `sendFailed` input. */
  readonly send: (envelope: WireEnvelope) => void;
  /** How long a request waits for its answer (svc.rpc.askTimeout). */
  readonly deadlineMs: number;
  /** Why the last connection failed, if one did (named in a failed send's error). */
  readonly connectFailure?: () => string | undefined;
}

interface Pending {
  readonly type: string;
  readonly resolve: (message: Message) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * The driver's own voice toward its lifecycle manager (unregistering shuffles and the application). Every request
 * settles: with the answer, with RequestFailedError when the send failed or no answer came within the deadline, or
 * with the stop reason when the node is stopped (an application closing).
 */
export class DriverNode implements HostedNode {
  private nextRequest = 1;
  private readonly pending = new Map<number, Pending>();
  private stoppedBy: Error | undefined;

  constructor(
    readonly id: string,
    private readonly lifecycleManager: string,
    private readonly options: DriverNodeOptions,
  ) {}

  input(input: Input): void {
    if (input.kind === 'receive' && input.envelope.inReplyTo !== undefined) {
      this.settle(input.envelope.inReplyTo)?.resolve(input.envelope.message);
    } else if (input.kind === 'sendFailed' && input.requestId !== undefined) {
      const pending = this.settle(input.requestId);
      const why = this.options.connectFailure?.();
      pending?.reject(
        new RequestFailedError(
          pending.type,
          `${pending.type} could not be sent to ${this.lifecycleManager}` +
            `${why === undefined ? '' : ` (${why})`}: the lifecycle manager is not reachable`,
        ),
      );
    }
  }

  /** Asks the lifecycle manager; rejects with SvcClientError when it answers with a failure status. */
  async ask(message: Message): Promise<void> {
    const answer = await this.request(message);
    if (answer.type === 'StatusResponse' && answer.status !== 'SUCCESS') {
      throw new SvcClientError(`${message.type} failed (${answer.status}): ${answer.message}`);
    }
  }

  /** Asks the lifecycle manager and resolves with its answer, whatever its status. */
  async request(message: Message): Promise<Message> {
    if (this.stoppedBy !== undefined) throw this.stoppedBy;
    const requestId = this.nextRequest++;
    const answer = await new Promise<Message>((resolve, reject) => {
      const deadlineMs = this.options.deadlineMs;
      const timer = setTimeout(() => {
        this.settle(requestId);
        reject(
          new RequestFailedError(
            message.type,
            `${message.type} got no answer from ${this.lifecycleManager} within ${deadlineMs} ms ` +
              '(svc.rpc.askTimeout): the lifecycle manager does not answer',
          ),
        );
      }, deadlineMs);
      this.pending.set(requestId, { type: message.type, resolve, reject, timer });
      this.options.send({ from: this.id, to: this.lifecycleManager, requestId, message });
    });
    return answer;
  }

  /** Rejects every open request with `reason`, and every later one. */
  stop(reason: Error): void {
    this.stoppedBy ??= reason;
    for (const requestId of [...this.pending.keys()]) this.settle(requestId)?.reject(this.stoppedBy);
  }

  private settle(requestId: number): Pending | undefined {
    const pending = this.pending.get(requestId);
    if (pending === undefined) return undefined;
    this.pending.delete(requestId);
    clearTimeout(pending.timer);
    return pending;
  }
}
