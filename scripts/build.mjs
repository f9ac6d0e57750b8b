#!/usr/bin/env node
// `npm run build`: compiles everything the package ships to dist/ (the client, the servers and the svc command,
// tsconfig.build.json) and copies beside the JavaScript the files it reads at run time (the OpenAPI documents).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
const ASSETS = ['runtime/http/openapi'];

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
  cwd: root,
  stdio: 'inherit',
});
for (const asset of ASSETS) {
  cpSync(path.join(root, asset), path.join(dist, asset), {
    recursive: true,
    filter: (source) => !source.endsWith('.test.ts'),
  });
}
console.log(`built ${path.relative(process.cwd(), dist) || 'dist'}/`);
