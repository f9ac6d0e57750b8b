import { LocalCluster } from '../runtime/cluster/local-cluster.ts';
import { runChecks, ALL_CHECKS } from './runner.ts';
import { formatTable, summarize, summaryLine } from './report/format.ts';
const release = process.argv[2] ?? '0.6.0';
const only = process.argv[3];
const c = await LocalCluster.start({ workers: 1, release });
try {
  const rows = await runChecks(
    {
      release,
      masterUrl: c.masterHttpUrl,
      workerUrls: [c.workerHttpUrl(0)],
      dataUrl: c.masterUrl,
      serverCommand: [process.execPath, 'bin/svc.mjs'],
    },
    ALL_CHECKS.filter((x) => only === undefined || x.name === only),
  );
  console.log(formatTable(rows, { evidenceWidth: 140 }));
  for (const s of summarize(rows)) console.log(summaryLine(s));
} finally {
  await c.stop();
}
