// Loaded into every test file's process by scripts/run-tests.mjs (`--import`). A test whose code never yields (a loop
// that does not end, a property that never finishes one run) blocks the event loop, so neither node's per-test
// timeout nor any `within` deadline can fire, and the runner only kills the file at its own limit without saying
// which test hung. A worker thread watches a heartbeat of the main thread; when the heartbeat stops for
// SVC_TEST_BLOCKED_LIMIT_MS (default 60 s), it prints the test that was running and where the main thread is
// (its stack, taken through the inspector), then kills the process so that the run goes on at once. A thread blocked
// in native code (spawnSync of a slow child) is only reported: it is no loop, and the call has an end of its own.
import { afterEach, beforeEach } from 'node:test';
import { setInterval, setTimeout } from 'node:timers';
import { TextEncoder } from 'node:util';
import { isMainThread, Worker } from 'node:worker_threads';

const NAME_BYTES = 1024;

function watch() {
  const limitMs = Number(process.env.SVC_TEST_BLOCKED_LIMIT_MS ?? 60_000);
  // [heartbeats, length of the running test's name], then the name's bytes.
  const shared = new SharedArrayBuffer(8 + NAME_BYTES);
  const counters = new Int32Array(shared, 0, 2);
  const nameBytes = new Uint8Array(shared, 8, NAME_BYTES);
  const running = [];

  const publish = () => {
    const names = running.map((test) => test.name).join(' | ');
    const encoded = new TextEncoder().encode(names).subarray(0, NAME_BYTES);
    nameBytes.set(encoded);
    Atomics.store(counters, 1, encoded.length);
  };
  beforeEach((t) => {
    running.push({ name: t.name, at: Date.now() });
    publish();
  });
  afterEach((t) => {
    const at = running.findLastIndex((test) => test.name === t.name);
    if (at >= 0) running.splice(at, 1);
    publish();
  });

  const beatMs = 250;
  let lastBeatAt = Date.now();
  const longest = { ms: 0, test: '' };
  setInterval(() => {
    Atomics.add(counters, 0, 1);
    const now = Date.now();
    const stall = now - lastBeatAt - beatMs;
    if (stall > longest.ms)
      Object.assign(longest, { ms: stall, test: running.map((test) => test.name).join(' | ') });
    lastBeatAt = now;
  }, beatMs).unref();
  // With SVC_TEST_STALLS set, each file says how long its event loop stood still at most: the measure for the limit.
  if (process.env.SVC_TEST_STALLS)
    process.on('exit', () =>
      process.stderr.write(`longest stall ${longest.ms} ms in ${process.argv[1]} (${longest.test})\n`),
    );
  const file = process.argv[1] ?? 'a test file';
  warnBeforeFileLimit(file, running);
  new Worker(WATCHER, { eval: true, workerData: { shared, limitMs, file } }).unref();
}

/**
 * node's runner ends a file at its --test-timeout, which it also applies to the file as a whole, naming no test: a
 * test waiting without end, or a file grown too slow, only says "test timed out". 20 s before that, this says which
 * tests are running and for how long.
 */
function warnBeforeFileLimit(file, running) {
  const flag = process.execArgv.find((arg) => arg.startsWith('--test-timeout='));
  const limitMs = Number(flag?.slice('--test-timeout='.length));
  if (!Number.isFinite(limitMs) || limitMs <= 40_000) return;
  const warnAfterMs = limitMs - 20_000;
  setTimeout(() => {
    const now = Date.now();
    const tests = running.map((test) => `"${test.name}" (for ${Math.round((now - test.at) / 1000)} s)`);
    process.stderr.write(
      `\n${file}: ${warnAfterMs / 1000} s into this file, which node's runner ends at ${limitMs / 1000} s; ` +
        `running: ${tests.join(', ') || 'no test'}\n`,
    );
  }, warnAfterMs).unref();
}

// Runs in the worker thread: plain CommonJS, as `eval` workers are.
const WATCHER = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const inspector = require('node:inspector');
const { shared, limitMs, file } = workerData;
const counters = new Int32Array(shared, 0, 2);
const nameBytes = new Uint8Array(shared, 8);
let lastBeat = -1;
let since = Date.now();
let probing = false;
let noted = false;
setInterval(() => {
  const beat = Atomics.load(counters, 0);
  if (beat !== lastBeat) {
    lastBeat = beat;
    since = Date.now();
    noted = false;
    return;
  }
  if (probing || Date.now() - since < limitMs) return;
  probing = true;
  mainThreadStack((stack) => {
    probing = false;
    const name = new TextDecoder().decode(nameBytes.slice(0, Atomics.load(counters, 1)));
    const head = '\\n' + file + ': the event loop has not turned for ' + Math.round((Date.now() - since) / 1000) +
      ' s, in test "' + (name || '(none running)') + '"';
    if (stack === undefined) {
      // A thread in native code (spawnSync, a synchronous file operation) does not answer the inspector: that is
      // no JavaScript loop, and such a call ends or has a timeout of its own. Say so once, and keep watching.
      if (!noted) writeSync(2, head + ': it is in native code (a synchronous child process?); not ending it.\\n');
      noted = true;
      since = Date.now();
      return;
    }
    writeSync(2, head + ': a synchronous loop that does not end? Ending the process (SVC_TEST_BLOCKED_LIMIT_MS=' +
      limitMs + ').\\n' + stack + '\\n');
    process.kill(process.pid, 'SIGKILL');
  });
}, 1000);

// The main thread's stack, through the inspector, which interrupts JavaScript that never yields. Hands undefined to
// done() when the thread does not answer within 5 s (it is in native code); a pause that comes later is undone.
function mainThreadStack(done) {
  let answered = false;
  let abandoned = false;
  const asked = Date.now();
  const session = new inspector.Session();
  const urls = new Map();
  setTimeout(() => {
    if (answered) return;
    abandoned = true;
    done(undefined);
  }, 5000);
  try {
    session.connectToMainThread();
    session.on('Debugger.scriptParsed', ({ params }) => urls.set(params.scriptId, params.url));
    session.on('Debugger.paused', ({ params }) => {
      if (abandoned) {
        session.post('Debugger.resume', () => session.disconnect());
        return;
      }
      answered = true;
      // JavaScript that spins answers within milliseconds. A late answer is a thread that came back from native code
      // (spawnSync returning) and paused at its next statement: no loop; let it go on.
      if (Date.now() - asked > 1000) {
        session.post('Debugger.resume', () => session.disconnect());
        done(undefined);
        return;
      }
      done(stackText(params.callFrames, urls));
    });
    session.post('Debugger.enable', () => {
      if (abandoned) session.disconnect();
      else session.post('Debugger.pause');
    });
  } catch (error) {
    answered = true;
    done('(no stack: ' + String(error) + ')');
  }
}

function stackText(callFrames, urls) {
  const frames = callFrames.slice(0, 40).map((frame) => {
    const { lineNumber, columnNumber } = frame.location;
    return '    at ' + (frame.functionName || '<anonymous>') + ' (' + (urls.get(frame.location.scriptId) || '?') + ':' +
      (lineNumber + 1) + ':' + (columnNumber + 1) + ')';
  });
  // Recursion repeats a frame many times: print a run of the same frame once, with its count.
  const lines = [];
  for (const frame of frames) {
    const last = lines[lines.length - 1];
    if (last !== undefined && last.frame === frame) last.count += 1;
    else lines.push({ frame, count: 1 });
  }
  return 'main thread stack:\\n' + lines.map(({ frame, count }) => (count > 1 ? frame + ' (x' + count + ')' : frame)).join('\\n');
}
`;

// Only the process of a test file is watched: node's runner marks it with NODE_TEST_CONTEXT. The orchestrating
// process (`node --test`) runs no test itself, and a process a test forks with this one's flags, or a worker thread,
// is no test file.
if (isMainThread && process.env.NODE_TEST_CONTEXT !== undefined && !process.execArgv.includes('--test'))
  watch();
