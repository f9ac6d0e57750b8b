#!/usr/bin/env node
// The server package's `svc`. Installed, it runs the compiled servers (dist/, made by scripts/build.mjs). In this
// repository npm links it as node_modules/.bin/svc (a workspace's binary), so there it runs the source tree's svc
// through tsx, as bin/svc.mjs does: `npx svc` in a checkout never runs a stale or missing build.
import { existsSync } from 'node:fs';

const inSourceTree = existsSync(new URL('../../../bin/svc-program.ts', import.meta.url));
await import(inSourceTree ? new URL('../../../bin/svc.mjs', import.meta.url).href : '../dist/bin/svc.js');
