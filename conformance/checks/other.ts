// Section 9.3 where it shows from outside: the master URL scheme a worker takes (rss:// before 0.3.0, svc:// from
// then on). A worker the suite starts with the other release's scheme refuses to start; one with the right scheme
// starting is the `3/registered` row.
import { masterUrlSchemeAt } from '../expectations/other.ts';
import { excerpt } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, type RuleSpec } from '../rows.ts';
import { scratchDir, startServer, workerSettings } from '../servers.ts';

const SCHEME: RuleSpec = {
  ruleId: '9.3/master-url-scheme',
  section: '9.3',
  title:
    'the master URL scheme changed from rss:// to svc:// in 0.3.0: a worker given the other scheme refuses to start',
};

export const otherChangesCheck = async (target: Target): Promise<RuleRow[]> => {
  const release = target.release;
  if (target.serverCommand === undefined)
    return [
      notApplicable(release, SCHEME, 'the suite was given no server command to start a worker of its own'),
    ];
  const right = masterUrlSchemeAt(release);
  const wrong = right === 'svc' ? 'rss' : 'svc';
  const scratch = scratchDir();
  try {
    return await guarded(release, SCHEME, async () => {
      const started = await startServer(
        target.serverCommand!,
        'worker',
        [`${wrong}://127.0.0.1:1`, '--release', release],
        workerSettings(scratch.dir),
      );
      if (started.kind === 'listening') {
        await started.server.stop();
        return fail(
          release,
          SCHEME,
          `a worker given ${wrong}://127.0.0.1:1 at ${release} started and listened`,
        );
      }
      const named = started.output.split('\n').find((line) => line.includes(`${right}://`));
      return started.code !== 0 && named !== undefined
        ? pass(
            release,
            SCHEME,
            `${wrong}://127.0.0.1:1 refused, exit ${started.code}: "${excerpt(named, 160)}"`,
          )
        : fail(
            release,
            SCHEME,
            `exit ${started.code}, no line naming ${right}://: ${excerpt(started.output, 200)}`,
          );
    });
  } finally {
    scratch.dispose();
  }
};
