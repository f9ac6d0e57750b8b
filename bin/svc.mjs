#!/usr/bin/env node
// The `svc` command: runs the TypeScript CLI through tsx so that `npx svc ...` works straight after `npm ci`.
import { register } from 'tsx/esm/api';

register();
await import('../runtime/cli/main.ts');
