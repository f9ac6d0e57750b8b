import type { Envelope } from '../../core/machines/effects.ts';
import { CURRENT_RELEASE } from '../../core/release/version.ts';
import { createLogger } from '../log.ts';
import type { AddressBook } from './addresses.ts';
import { Transport } from './transport.ts';

/**
 * A worker-role transport for loopback tests of the transport itself: generous limits, no authentication, every
 * peer admitted, every envelope handed to `deliver`; `written` as TransportOptions has it.
 */
export function loopbackTransport(
  nodeId: string,
  addresses: AddressBook,
  deliver: (envelope: Envelope) => void,
  written?: (pieces: readonly Uint8Array[]) => void,
): Transport {
  return new Transport({
    self: { role: 'worker', release: CURRENT_RELEASE, nodeId },
    maxFrameBytes: 1 << 24,
    frameTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    addresses,
    logger: createLogger('silent', { role: 'test' }),
    isLocal: () => false,
    deliver: (envelope) => {
      deliver(envelope);
      return true;
    },
    sendFailed: () => undefined,
    ...(written === undefined ? {} : { written }),
  });
}
