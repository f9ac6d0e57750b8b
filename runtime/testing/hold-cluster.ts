// Starts a local cluster in a directory given as the first argument, prints one JSON line with its servers' pids,
// and holds it until killed: runtime/cluster/orphans.test.ts kills this process outright and checks that the
// servers go with it.
import { LocalCluster } from '../cluster/local-cluster.ts';

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: hold-cluster.ts DIR');
const cluster = await LocalCluster.start({ workers: 1, dir, keepDir: true });
const pids = [cluster.master.pid, ...cluster.workers.map((worker) => worker.pid)];
console.log(JSON.stringify({ event: 'held', pids }));
setInterval(() => undefined, 1 << 30);
