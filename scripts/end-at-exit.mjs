// Loaded into every test file's process by scripts/run-tests.mjs (`--import`): once the process emits 'exit', it ends
// there, after the other 'exit' listeners, as process.exit() does. Node 20 sometimes never finishes a process whose
// event loop ran out: the main thread spins in node::Environment::CleanupHandles (seen under gdb) while libuv's loop
// holds no active handle or request, so `uv_run` returns at once, forever. The runner then waits for the file until
// its limit and fails it with "test timed out" although every test passed (runtime/chaos/planted-bug.test.ts, about
// one run in six on this machine and in CI). After 'exit' nothing of the file is left to run and stdout, a pipe, is
// written synchronously, so ending the process there loses nothing. Servers are not concerned: they end through
// process.exit() (runtime/process/signals.ts, runtime/cli/server-commands.ts), which skips that cleanup.
if (process.env.NODE_TEST_CONTEXT !== undefined && !process.execArgv.includes('--test')) {
  process.on('exit', function endAtExit(code) {
    const listeners = process.listeners('exit');
    for (const listener of listeners.slice(listeners.indexOf(endAtExit) + 1)) listener.call(process, code);
    // Inside 'exit' (process._exiting is set) process.exit() emits nothing more and ends the process at once.
    process.exit(code);
  });
}
