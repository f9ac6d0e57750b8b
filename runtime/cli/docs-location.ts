// Where the documentation of this copy of svc is on disk, for `--help` to point at: the package's own docs/
// folder, found from this module whether it runs from the source tree or compiled under dist/.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The nearest `docs/` beside a `package.json` above this module; undefined when the copy has none. */
export function installedDocs(from: string = import.meta.dirname): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) {
      const docs = path.join(dir, 'docs');
      return existsSync(path.join(docs, 'operations.md')) ? docs : undefined;
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** The line `--help` ends with: the documentation this installation holds. */
export function documentationLine(): string {
  const docs = installedDocs();
  return docs === undefined
    ? 'Documentation: docs/ of the svc package (README.md, deployment.md, operations.md, configuration.md).'
    : `Documentation: ${docs} (deployment.md, operations.md, configuration.md, client.md, http-api.md).`;
}
