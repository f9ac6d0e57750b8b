import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fallbackHistory } from '../core/release/config-changes.ts';
import { REGISTRY, type ConfigEntry } from '../conf/registry/registry.ts';
import { CONTROL_PLANE_MODULE } from '../conf/registry/spec.ts';
import { scanKeyReads } from './key-reads.ts';

const ROOT = new URL('..', import.meta.url).pathname;
/** One scan for every test: it builds a TypeScript program of conf/ and runtime/, which takes seconds. */
const READS = scanKeyReads(ROOT);

/** The keys a read of `entry` reads too: its fallbacks (declared or in the contract's table) and legacy sources. */
function readAlongWith(entry: ConfigEntry): string[] {
  const fallbacks = fallbackHistory(entry.template).flatMap((dated) => [dated.change.from, dated.change.to]);
  return [
    ...(entry.declaredFallback === undefined ? [] : [entry.declaredFallback.key]),
    ...fallbacks.map((key) => key.replace('<module>', CONTROL_PLANE_MODULE)),
    ...(entry.legacy?.keys ?? []),
  ];
}

/** Every key some code path of conf/ or runtime/ reads, directly or as the fallback or source of a read key. */
function readKeys(): ReadonlySet<string> {
  const read = new Set(
    REGISTRY.entries.filter((entry) => READS.readersOf(entry.key).length > 0).map((entry) => entry.key),
  );
  for (let grew = true; grew;) {
    grew = false;
    for (const entry of REGISTRY.entries) {
      if (!read.has(entry.key)) continue;
      for (const key of readAlongWith(entry)) {
        if (!read.has(key)) {
          read.add(key);
          grew = true;
        }
      }
    }
  }
  return read;
}

describe('every configuration key takes effect or says it does not (issue 33)', () => {
  const read = readKeys();

  it('marks every key that no code path reads as accepted with no effect, with a reason', () => {
    const silent = REGISTRY.entries
      .filter((entry) => !read.has(entry.key) && entry.effect === undefined)
      .map((entry) => entry.key);
    assert.deepEqual(
      silent,
      [],
      `no code in conf/ or runtime/ reads these keys, and the registry does not say so: make them take effect, ` +
        `or give their declaration (conf/registry/keys/) effect: compatibilityOnly(reason) or ` +
        `notImplementedYet(reason): ${silent.join(', ')}`,
    );
  });

  it('keeps no compatibility-only mark on a key that some code now reads', () => {
    const stale = REGISTRY.entries
      .filter(
        (entry) => read.has(entry.key) && entry.effect !== undefined && entry.effect.pending === undefined,
      )
      .map((entry) => entry.key);
    assert.deepEqual(
      stale,
      [],
      `these keys are read but marked compatibility-only: remove the mark: ${stale.join(', ')}`,
    );
  });

  it('gives every mark a one-line reason', () => {
    for (const entry of REGISTRY.entries) {
      if (entry.effect === undefined) continue;
      assert.ok(entry.effect.reason.length > 0 && !entry.effect.reason.includes('\n'), entry.key);
    }
  });
});

describe('the scan for key reads', () => {
  const reads = READS;

  it('counts a key named as a whole literal, and a template whose parts are literal types', () => {
    assert.ok(
      reads.readersOf('svc.master.slot.assign.extraSlots').includes('conf/machine-configs.ts'),
      "reads.readersOf('svc.master.slot.assign.extraSlots').includes('conf/machine-configs.ts')",
    );
    // `svc.worker.${service}.port` over rpc, push, fetch and replicate reads those four, not the internal port.
    assert.ok(
      reads.readersOf('svc.worker.push.port').includes('runtime/process/worker.ts'),
      "reads.readersOf('svc.worker.push.port').includes('runtime/process/worker.ts')",
    );
    assert.equal(reads.readersOf('svc.worker.internal.port').length, 0);
    // `${prefix}.basic.file` with prefix = `svc.${role}.http.auth`.
    assert.ok(
      reads.readersOf('svc.worker.http.auth.basic.file').includes('runtime/http/auth.ts'),
      "reads.readersOf('svc.worker.http.auth.basic.file').includes('runtime/http/auth.ts')",
    );
  });

  it('does not count a key named inside a message, or in core/ (which never reads configuration)', () => {
    // runtime/transport/node-network.ts names svc.ssl.caFile in an error message and reads it; core names the host
    // patterns only in messages, conf/machine-configs.ts reads them.
    assert.deepEqual(reads.readersOf('svc.master.allowWorkerHostPattern'), ['conf/machine-configs.ts']);
  });
});
