// A process that writes to a durable store and then waits to be killed (durable-store.test.ts): it prints
// `written` once write() resolved, so the test can kill it with SIGKILL at exactly that point and check that the
// write survived. Arguments: backend, directory, key, value.
import { openDurableStore, type DbBackend } from '../durable-store.ts';

const [backend, dir, key, value] = process.argv.slice(2);
if (backend === undefined || dir === undefined || key === undefined || value === undefined) {
  process.stderr.write('usage: write-then-wait.ts BACKEND DIR KEY VALUE\n');
  process.exit(2);
}
const store = await openDurableStore(backend as DbBackend, dir);
await store.write([{ key, value }]);
process.stdout.write('written\n');
// Nothing else keeps the process alive; it must still be running when the kill arrives.
setInterval(() => undefined, 60_000);
