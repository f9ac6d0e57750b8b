// An executor process of the demo job (`node --import tsx runtime/demo/executor.ts`): runs the map and reduce tasks
// the driver sends on stdin with the client library, and answers on stdout (./protocol.ts). It exits when told to,
// or when its stdin closes (the driver is gone).
import { once } from 'node:events';
import { constants, setPriority } from 'node:os';
import { createInterface } from 'node:readline';
import { connectExecutor, type ShuffleClient } from '../client/shuffle-client.ts';
import { decodeLine, encodeLine, type FromExecutor, type ToExecutor } from './protocol.ts';
import { expectedDigests, Grouping, mapChunks, type DatasetSpec } from './records.ts';

/** How often a running map reports its acknowledged bytes. */
const PROGRESS_MS = 200;

function send(message: FromExecutor): void {
  process.stdout.write(encodeLine(message));
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

let spec: DatasetSpec | undefined;
let client: ShuffleClient | undefined;
const running = new Set<Promise<void>>();

async function runMap(task: Extract<ToExecutor, { type: 'map' }>, spec: DatasetSpec, client: ShuffleClient) {
  const started = performance.now();
  const shuffle = client.shuffle(task.shuffleId, { maps: spec.maps, partitions: spec.reduces });
  const writer = shuffle.writer(task.mapId, task.attemptId);
  let reported = -1;
  const timer = setInterval(() => {
    const bytes = writer.acknowledgedBytes();
    if (bytes !== reported) send({ type: 'progress', task: task.task, bytes });
    reported = bytes;
  }, PROGRESS_MS);
  try {
    // The map's records are pushed while it generates them; when the writer says it holds its budget, the map
    // waits for 'drain' (Node's back-pressure), so that the executor holds about the budget whatever the map's size.
    for (const chunk of mapChunks(spec, task.mapId)) {
      const size = chunk.recordBytes;
      for (let i = 0, at = 0; i < chunk.count; i += 1, at += size) {
        if (!writer.write(chunk.partitions[i]!, chunk.bytes, at, size)) await once(writer, 'drain');
      }
    }
    const result = await writer.close();
    send({
      type: 'mapDone',
      task: task.task,
      ...result,
      ms: performance.now() - started,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    });
  } finally {
    clearInterval(timer);
  }
}

async function runReduce(
  task: Extract<ToExecutor, { type: 'reduce' }>,
  spec: DatasetSpec,
  client: ShuffleClient,
) {
  const started = performance.now();
  const shuffle = client.shuffle(task.shuffleId, { maps: spec.maps, partitions: spec.reduces });
  // Streamed: the reducer holds at most svc.client.fetch.maxReqsInFlight chunks of its partition at a time. The
  // grouping keeps counts and copied keys, never a record, so a later chunk may be read into a consumed one's memory.
  const grouping = new Grouping(spec.keyBytes);
  for await (const chunk of shuffle.reader(task.partition).chunks({ reuseChunkMemory: true }))
    grouping.add(chunk);
  const { digest, largestGroup } = grouping.finish();
  send({ type: 'reduceDone', task: task.task, digest, largestGroup, ms: performance.now() - started });
}

function runExpect(task: Extract<ToExecutor, { type: 'expect' }>, spec: DatasetSpec): Promise<void> {
  // The check of the job must not slow the job it checks: generating every map again takes about 1.4 CPU s per
  // GiB, which on a small machine the job's own processes would otherwise lose. At the lowest priority the
  // verifier runs in the job's idle time and finishes after it if it must (the driver awaits it then).
  try {
    setPriority(constants.priority.PRIORITY_LOW);
  } catch {
    // Not allowed here (a platform or sandbox without it): the digests come as fast, the job a little slower.
  }
  const started = performance.now();
  const digests = expectedDigests(spec);
  send({ type: 'expectDone', task: task.task, digests, ms: performance.now() - started });
  return Promise.resolve();
}

function track(task: number, work: () => Promise<void>): void {
  const promise = work()
    .catch((error: unknown) => send({ type: 'failed', task, error: errorText(error) }))
    .finally(() => running.delete(promise));
  running.add(promise);
}

async function exit(code: number): Promise<never> {
  await Promise.allSettled(running);
  await client?.close().catch(() => undefined);
  process.exit(code);
}

function handle(message: ToExecutor): void {
  switch (message.type) {
    case 'init':
      spec = message.spec;
      if (message.client !== undefined) {
        try {
          client = connectExecutor({ ...message.client, logLevel: 'warn' });
        } catch (error) {
          send({ type: 'fatal', error: errorText(error) });
          void exit(1);
          return;
        }
      }
      send({ type: 'ready', pid: process.pid });
      return;
    case 'map':
    case 'reduce':
    case 'expect': {
      const current = spec;
      if (current === undefined || (message.type !== 'expect' && client === undefined)) {
        send({
          type: 'failed',
          task: message.task,
          error: `a ${message.type} task before the executor's init`,
        });
        return;
      }
      if (message.type === 'map') track(message.task, () => runMap(message, current, client!));
      else if (message.type === 'reduce') track(message.task, () => runReduce(message, current, client!));
      else track(message.task, () => runExpect(message, current));
      return;
    }
    case 'exit':
      void exit(0);
      return;
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const message = decodeLine<ToExecutor>(line);
  if (message === undefined) send({ type: 'fatal', error: `not a task: ${line.slice(0, 200)}` });
  else handle(message);
});
// No driver any more (stdin closed): nobody waits for the tasks under way.
lines.on('close', () => process.exit(0));
// A Ctrl-C in the terminal reaches every process of the group: the driver decides what happens, not this one.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => process.exit(143));
