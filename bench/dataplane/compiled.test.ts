// The dataplane benchmark's compiled build (./compiled.ts): it compiles, its processes run, and profiles name the
// source files. What the build measures is the benchmark's business, not this test's.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { Child } from './children.ts';
import { compiledEntries, COMPILED_DIR, sourceOfCompiled } from './compiled.ts';
import { areaOf } from './profile.ts';
import type { FromSink, SinkAck, SinkMode, ToSink } from './protocol.ts';

/** Starts the compiled sink in `mode`, runs `use` with its ports, and stops it and removes its directory. */
async function withCompiledSink(
  mode: SinkMode,
  use: (ready: Extract<FromSink, { type: 'sink-ready' }>) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-compiled-test-'));
  const probeDir = path.join(dir, 'probes');
  mkdirSync(probeDir);
  const sink = await Child.start<ToSink, FromSink>({ name: 'sink', entry: compiledEntries().sink, probeDir });
  try {
    const ready = await sink.ask({ type: 'sink-init', mode, dir, chunkBytes: 1 << 20 });
    if (ready.type !== 'sink-ready') throw new Error(`the ${mode} sink answered ${ready.type}`);
    await use(ready);
  } finally {
    await sink.stop({ type: 'exit' });
    rmSync(dir, { recursive: true, force: true });
  }
}

it('compiles the clients, the sinks and the servers, and a compiled sink answers', async () => {
  const entries = compiledEntries();
  for (const file of [entries.client[0]!, entries.sink[0]!, entries.server![1]!]) {
    assert.ok(file.endsWith('.js') && existsSync(file), `${file} is compiled`);
  }
  await withCompiledSink('discard', (ready) => {
    assert.ok(ready.ports.push > 0, `the sink listens (push port ${ready.ports.push})`);
    return Promise.resolve();
  });
});

it('a compiled keeping sink checks and keeps a pushed stream, and acknowledges every byte', async () => {
  // `keep` loads the native CRC-32 from the compiled file's place: it must resolve there too.
  await withCompiledSink('keep', async (ready) => {
    const frames = [3 << 20, 5, 0].map((length) => {
      const frame = Buffer.alloc(4 + length, 7);
      frame.writeUInt32BE(length, 0);
      return frame;
    });
    const stream = Buffer.concat(frames);
    const ack = await new Promise<SinkAck>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: ready.ports.push }, () => socket.end(stream));
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('end', () => resolve(JSON.parse(text) as SinkAck));
      socket.on('error', reject);
    });
    assert.deepEqual(ack, { bytes: stream.length, frames: frames.length });
  });
});

it("names a compiled file's source, so that a profile's areas are the repository's folders", () => {
  const root = '/repo';
  const compiled = `file://${root}/${COMPILED_DIR}/0123456789ab/runtime/wire/frames.js`;
  assert.equal(sourceOfCompiled(new URL(compiled).pathname), 'runtime/wire/frames.ts');
  assert.equal(sourceOfCompiled(`${root}/runtime/wire/frames.ts`), undefined);
  assert.equal(areaOf({ functionName: 'f', url: compiled, lineNumber: 3 }, root), 'runtime/wire');
  const dependency = `file://${root}/node_modules/@bufbuild/protobuf/dist/esm/wire/varint.js`;
  assert.equal(
    areaOf({ functionName: 'f', url: dependency, lineNumber: 3 }, root),
    'package @bufbuild/protobuf',
  );
});
