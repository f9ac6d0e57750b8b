#!/usr/bin/env node
// The source tree's `svc` (`npx svc …` in this repository): the TypeScript through tsx, so that it works straight
// after `npm ci` and never runs a stale build. The published `svc` is the server package's compiled
// dist/bin/svc.js (packages/server, scripts/build.mjs).
const { register } = await import('tsx/esm/api');
register();
await import('./svc-program.ts');
