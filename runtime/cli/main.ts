// The runtime's own entry point: `svc` without the conformance suite. Server processes and the runtime's tests start
// this file; the installed `svc` (bin/svc.mjs) is the same program with `svc conformance` added.
import { svcProgram } from './program.ts';

await svcProgram().parseAsync(process.argv);
