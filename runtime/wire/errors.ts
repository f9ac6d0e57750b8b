/** Why a frame was refused: each closes its connection with one logged reason (docs/protocol.md, Faults). */
export type WireErrorReason = 'oversized' | 'malformed' | 'unknown';

export class WireError extends Error {
  constructor(
    readonly reason: WireErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'WireError';
  }
}
