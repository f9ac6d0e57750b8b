#!/usr/bin/env node
// The `svc` command. An installed package runs its compiled JavaScript (dist/, made by `npm run build`); a source
// checkout (which has a tsconfig.json) runs the TypeScript through tsx, so that `npx svc ...` works straight after
// `npm ci` and never runs a stale build.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/bin/svc-program.js', import.meta.url);
if (!existsSync(new URL('../tsconfig.json', import.meta.url)) && existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./svc-program.ts');
}
