#!/usr/bin/env node
// The conformance package's program (`npx @svc-shuffle/conformance --master svc://HOST:PORT …`): the suite on its
// own, against any deployment. Servers of the suite's own are started with the server package's `svc` when it is
// installed beside this package, else with --server-command; without either those rules are not applicable.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { conformanceCommand } from './command.ts';

const SERVER_PACKAGE = '@svc-shuffle/server';

/** `node <server package>/dist/bin/svc.js`, when the server package resolves from here and is built. */
function installedServerCommand(): string[] | undefined {
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve(`${SERVER_PACKAGE}/package.json`);
  } catch {
    return undefined;
  }
  const svc = path.join(path.dirname(manifest), 'dist', 'bin', 'svc.js');
  return existsSync(svc) ? [process.execPath, svc] : undefined;
}

await conformanceCommand({
  name: 'svc-conformance',
  defaultServerCommand: installedServerCommand,
  noServerCommand:
    `svc-conformance: ${SERVER_PACKAGE} is not installed beside this package and no --server-command was ` +
    'given: the rules that start servers of their own are not applicable',
}).parseAsync(process.argv);
