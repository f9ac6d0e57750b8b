// A word count through svc, as an application writes it (docs/client.md). Plain Node.js, no build step:
//   node word-count.mjs svc://master-host:9097 input.txt
// It prints one `word<TAB>count` line per word, sorted by word. The driver and the one executor share this
// process here; in a real engine the executors are other processes, given app.appId and app.lifecycleManager.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import {
  connectExecutor,
  hashPartitioner,
  keyValue,
  startApplication,
  uint32,
  utf8,
} from '@svc-shuffle/client';

const [master = 'svc://127.0.0.1:9097', input] = process.argv.slice(2);
const text =
  input === undefined ? 'the quick brown fox\njumps over the lazy dog' : await readFile(input, 'utf8');
const lines = text.split('\n');

const MAPS = 2;
const PARTITIONS = 4;
const records = keyValue(utf8, uint32); // one record: the word and its count
const partitioner = hashPartitioner(PARTITIONS); // murmur3 of the word's UTF-8 bytes

const app = await startApplication({ master });
const client = connectExecutor({
  lifecycleManager: app.lifecycleManager,
  appId: app.appId,
  secret: app.secret,
});
try {
  const shuffle = client.shuffle(0, { maps: MAPS, partitions: PARTITIONS });

  // Map stage: map m counts the words of every MAPS-th line from line m, one record per distinct word.
  await Promise.all(
    Array.from({ length: MAPS }, async (_, mapId) => {
      const counts = new Map();
      for (let i = mapId; i < lines.length; i += MAPS) {
        for (const word of lines[i].toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []) {
          counts.set(word, (counts.get(word) ?? 0) + 1);
        }
      }
      const writer = shuffle.writer(mapId);
      for (const [word, count] of counts) {
        // false: the writer holds its budget of unacknowledged bytes; wait until the workers took some.
        if (!writer.write(partitioner.partition(word), records.encode(word, count)))
          await once(writer, 'drain');
      }
      await writer.close();
    }),
  );

  // Reduce stage: every word is in one partition only, so each partition's sums are final.
  const totals = [];
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const sums = new Map();
    // Streamed chunk by chunk: memory stays bounded whatever the partition's size.
    for await (const record of shuffle.reader(partition)) {
      const { key, value } = records.decode(record);
      sums.set(key, (sums.get(key) ?? 0) + value);
    }
    totals.push(...sums);
  }
  totals.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [word, count] of totals) console.log(`${word}\t${count}`);
} finally {
  await client.close();
  await app.close();
}
