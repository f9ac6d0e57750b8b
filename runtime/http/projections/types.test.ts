// The response types are the OpenAPI documents' own (clients/openapi): a projection that drifts from its document
// fails the typecheck. The `@ts-expect-error` lines below are the test: were the types a loose hand-kept mirror, an
// expected error would not occur and `npm run typecheck` would fail on the unused directive.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MasterSchemas, WorkerSchemas } from '../../../clients/openapi/index.ts';
import type { HandleResponse, WorkerData, WorkerInfoResponse, WorkersResponse } from './types.ts';

/** Compiles only when `A` and `B` are the same type. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const sameAsDocument: [
  Same<keyof WorkersResponse, keyof MasterSchemas['WorkersResponse']>,
  Same<WorkerData, MasterSchemas['WorkerData']>,
  Same<keyof WorkerInfoResponse, keyof WorkerSchemas['WorkerInfoResponse']>,
] = [true, true, true];

const EMPTY: WorkersResponse = {
  workers: [],
  lostWorkers: [],
  excludedWorkers: [],
  manualExcludedWorkers: [],
  shutdownWorkers: [],
  decommissioningWorkers: [],
};

describe('the management interface’s response types', () => {
  it('are the documents’ schemas: an unknown field, a missing one or a wrong type does not compile', () => {
    // @ts-expect-error a field the document does not have (a rename in one place only)
    const renamed: WorkersResponse = { ...EMPTY, lostWorker: [] };
    // @ts-expect-error a field svc always fills, left out
    const missing: HandleResponse = { success: true };
    // @ts-expect-error a field of the wrong type
    const mistyped: HandleResponse = { success: 'yes', message: '' };
    // What svc sends is what the typed client reads.
    const read: MasterSchemas['WorkersResponse'] = EMPTY;
    assert.deepEqual([renamed.workers, missing.success, mistyped.message, read.workers], [[], true, '', []]);
    assert.deepEqual(sameAsDocument, [true, true, true], 'the same fields as the documents');
  });
});
