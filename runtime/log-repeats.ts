import type { Logger } from './log.ts';

export interface RepeatedLogOptions {
  /** The length of one interval: repeats beyond the first few are told in one line at its end (svc.log.summary.interval). */
  readonly intervalMs: number;
  /** Lines of one cause written in full per interval before the rest are only counted. */
  readonly burst?: number;
}

interface Repeats {
  readonly event: string;
  readonly cause: string;
  readonly level: 'warn' | 'info';
  written: number;
  suppressed: number;
  examplePeer: string | undefined;
}

const DEFAULT_BURST = 3;

/**
 * A log for what hostile or broken peers cause, line after line: the first few lines of one cause in an interval are
 * written in full; the rest are counted, and one summary line at the interval's end tells how many there were, their
 * cause and an example peer (`event: 'log.repeated'`). 500 idle connections closed at once thus write a handful of
 * lines instead of 500 (docs/operations.md, "Limits and hostile peers").
 */
export class RepeatedLog {
  private readonly repeats = new Map<string, Repeats>();
  private timer: NodeJS.Timeout | undefined;
  private readonly burst: number;

  constructor(
    private readonly logger: Logger,
    private readonly options: RepeatedLogOptions,
  ) {
    this.burst = options.burst ?? DEFAULT_BURST;
  }

  /** A warning of `cause` (a short name: `sendsTooSlowly`, `oversized`, …) caused by `peer`. */
  warn(
    cause: string,
    fields: Readonly<Record<string, unknown>> & { readonly event: string },
    msg: string,
  ): void {
    this.write('warn', cause, fields, msg);
  }

  info(
    cause: string,
    fields: Readonly<Record<string, unknown>> & { readonly event: string },
    msg: string,
  ): void {
    this.write('info', cause, fields, msg);
  }

  /** Writes the summaries of the interval under way now (the process stops). */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.summarise();
  }

  private write(
    level: 'warn' | 'info',
    cause: string,
    fields: Readonly<Record<string, unknown>> & { readonly event: string },
    msg: string,
  ): void {
    const service = typeof fields.service === 'string' ? fields.service : '';
    const key = `${fields.event}\u0000${service}\u0000${cause}`;
    let repeats = this.repeats.get(key);
    if (repeats === undefined) {
      repeats = { event: fields.event, cause, level, written: 0, suppressed: 0, examplePeer: undefined };
      this.repeats.set(key, repeats);
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.summarise();
    }, this.options.intervalMs).unref();
    if (repeats.written < this.burst) {
      repeats.written += 1;
      this.logger[level]({ ...fields, cause }, msg);
      return;
    }
    repeats.suppressed += 1;
    if (repeats.examplePeer === undefined && typeof fields.peer === 'string')
      repeats.examplePeer = fields.peer;
  }

  private summarise(): void {
    for (const repeats of this.repeats.values()) {
      if (repeats.suppressed === 0) continue;
      this.logger[repeats.level](
        {
          event: 'log.repeated',
          repeatedEvent: repeats.event,
          cause: repeats.cause,
          count: repeats.suppressed,
          examplePeer: repeats.examplePeer,
          intervalMs: this.options.intervalMs,
        },
        `${repeats.suppressed} more ${repeats.event} (${repeats.cause}) in the last ` +
          `${this.options.intervalMs} ms, e.g. from ${repeats.examplePeer ?? 'an unknown peer'}`,
      );
    }
    this.repeats.clear();
  }
}
