// How svc starts processes of its own (servers, the demo's executors): the compiled JavaScript when this copy of
// svc is compiled (an installed package runs without tsx), else the TypeScript source through tsx (the source tree).
import { fileURLToPath } from 'node:url';

/** Whether this module is compiled JavaScript (dist/) rather than the TypeScript source. */
export const RUNS_COMPILED = import.meta.url.endsWith('.js');

/**
 * The command line that runs svc's module at `fromRuntime` (a path under runtime/, no extension: `cli/main`), the way
 * this copy runs: `node <file>.js`, or `node --import <tsx> <file>.ts`. tsx is resolved from here, not from the
 * caller's working directory, which may be an application's with no tsx.
 */
export function ownModuleCommand(fromRuntime: string): string[] {
  if (RUNS_COMPILED)
    return [process.execPath, fileURLToPath(new URL(`./${fromRuntime}.js`, import.meta.url))];
  return [
    process.execPath,
    '--import',
    import.meta.resolve('tsx'),
    fileURLToPath(new URL(`./${fromRuntime}.ts`, import.meta.url)),
  ];
}
