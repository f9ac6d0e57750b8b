// A reducer in its own process, for memory tests: reads one partition through the streaming reader and prints one
// JSON line with what it read and its resident memory (VmRSS) before the read and at its peak during it. Arguments:
// one JSON object { lifecycleManager, appId, secret?, conf, shuffleId, maps, partitions, partitionId,
// computeMsPerChunk }.
import { readFileSync, writeFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { connectExecutor } from '../client/shuffle-client.ts';

interface Task {
  readonly lifecycleManager: string;
  readonly appId: string;
  readonly secret?: string;
  readonly conf: Record<string, string>;
  readonly shuffleId: number;
  readonly maps: number;
  readonly partitions: number;
  readonly partitionId: number;
  /** A slow reducer: time it computes over each chunk (the fetches run on meanwhile, up to the read-ahead). */
  readonly computeMsPerChunk: number;
}

/** This process's resident memory now and its peak (VmHWM), in bytes, from /proc (Linux). */
function residentMemory(): { rss: number; peak: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

const task = JSON.parse(process.argv[2]!) as Task;
const client = connectExecutor({
  lifecycleManager: task.lifecycleManager,
  appId: task.appId,
  conf: task.conf,
  ...(task.secret === undefined ? {} : { secret: task.secret }),
});
try {
  const shuffle = client.shuffle(task.shuffleId, { maps: task.maps, partitions: task.partitions });
  // Everything the read itself does not need is loaded and settled before the baseline is taken.
  globalThis.gc?.();
  const before = residentMemory().rss;
  let peakReset = false;
  try {
    writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS (Linux)
    peakReset = true;
  } catch {
    // Without it, VmHWM holds the start's peak: the RSS sampled at every chunk below bounds the read alone.
  }
  let records = 0;
  let bytes = 0;
  let sum = 0;
  let sampledPeak = before;
  for await (const chunk of shuffle.reader(task.partitionId).chunks()) {
    for (const record of chunk) {
      records += 1;
      bytes += record.byteLength;
      sum = (sum + crc32(record)) % 0x100000000;
    }
    sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss());
    await new Promise((resolve) => setTimeout(resolve, task.computeMsPerChunk));
    sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss());
  }
  const peak = peakReset ? Math.max(sampledPeak, residentMemory().peak) : sampledPeak;
  process.stdout.write(`${JSON.stringify({ records, bytes, sum, before, peak })}\n`);
} finally {
  await client.close();
}
