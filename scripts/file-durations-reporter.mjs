// A node:test reporter that writes how long each test file took (wall time from the start of its process to its last
// event, as the runner saw it) as one JSON object { file: ms }. scripts/run-tests.mjs adds it beside the visible
// reporter and prints the slowest files after the run.
export default async function* fileDurations(source) {
  const started = new Map();
  const lastSeen = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (typeof file !== 'string') continue;
    const now = Date.now();
    // The runner dequeues a file's own test when it starts the file's process: the file's start.
    const isFileStart = event.type === 'test:dequeue' && event.data.nesting === 0 && event.data.name === file;
    if (isFileStart || !started.has(file)) started.set(file, now);
    lastSeen.set(file, now);
  }
  const durations = {};
  for (const [file, start] of started) durations[file] = (lastSeen.get(file) ?? start) - start;
  yield JSON.stringify(durations);
}
