// Loaded into every test file's process by scripts/run-tests.mjs (`--import`). fast-check runs a property until its
// runs (and the shrinking of a failure) are done, however long that takes; a property whose runs became slow, or
// whose shrinking wanders, held its file to the runner's limit. Here every property gets a time bound of its own:
// past SVC_PROPERTY_TIME_LIMIT_MS (default 60 s) it fails, naming the counterexample found so far if there is one.
// A property that declares its own limit keeps it. A single run that never returns is the watchdog's
// (scripts/test-watchdog.mjs): fast-check checks the clock only between runs.
import fc from 'fast-check';

fc.configureGlobal({
  ...fc.readConfigureGlobal(),
  interruptAfterTimeLimit: Number(process.env.SVC_PROPERTY_TIME_LIMIT_MS ?? 60_000),
  markInterruptAsFailure: true,
});
