/**
 * The memory passes a worker cannot avoid, timed in the benchmark's own process: one CRC-32 pass over every pushed
 * byte (the check each batch gets on arrival, with the native checksum every svc process installs) and one copy
 * into memory that is already faulted in (what the memory tier's pool costs per kept byte). Added to the
 * discarding sink's CPU they give the worker's floor in the same run: what the CPU goal leaves for everything else.
 */
import { nativeCrc32 } from '../../runtime/driver/native-checksum.ts';

/** Larger than any cache of the machines we run on, as pushed bytes are by the time a batch is checked. */
const BUFFER_BYTES = 256 * 2 ** 20;
const PASSES = 4;

export interface MemoryPasses {
  /** CPU seconds per GiB of one CRC-32 pass (the fastest of the passes). */
  readonly checksumSecondsPerGiB: number;
  /** CPU seconds per GiB of one copy into memory written before (the fastest of the passes). */
  readonly copySecondsPerGiB: number;
}

export function measureMemoryPasses(): MemoryPasses {
  // Neither pass's speed depends on the bytes: a plain fill spares a per-byte callback over 256 MiB.
  const source = new Uint8Array(BUFFER_BYTES).fill(7);
  const target = new Uint8Array(BUFFER_BYTES).fill(1);
  let sink = 0;
  const checksum = fastest(() => {
    sink ^= nativeCrc32(source);
  });
  const copy = fastest(() => target.set(source));
  // Read so that no pass can be optimised away.
  if (sink === 0x1_0000_0000 || target[0] !== source[0]) throw new Error('memory passes: impossible value');
  const perGiB = (seconds: number) => seconds / (BUFFER_BYTES / 2 ** 30);
  return { checksumSecondsPerGiB: perGiB(checksum), copySecondsPerGiB: perGiB(copy) };
}

/** The fastest of PASSES runs, in CPU seconds of this process (a floor: what the machine can do at best). */
function fastest(pass: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < PASSES; i += 1) {
    const before = process.cpuUsage();
    pass();
    const used = process.cpuUsage(before);
    best = Math.min(best, (used.user + used.system) / 1e6);
  }
  return best;
}
