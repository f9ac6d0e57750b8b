import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { partitionFileName, workerKey, type PartitionLocation } from '../../domain/index.ts';
import { decodeBatchFrames } from '../../protocol/batch-frame.ts';
import type { Message, MessageOf, MessageType } from '../../protocol/messages.ts';
import { masterNodeId } from '../../protocol/node-ids.ts';
import { initialMasterState, masterMachine } from '../master/index.ts';
import { testMasterConfig } from '../master/testing.ts';
import { InMemoryCluster, type Probe } from '../testing/in-memory-cluster.ts';
import { initialWorkerState, workerMachine } from './index.ts';
import { pushData, workerId, commitFiles } from './test-kit.ts';
import { testWorkerConfig } from './testing.ts';

/**
 * The master and workers together, driven by the in-memory cluster, with probes playing the lifecycle manager and
 * the tasks: registration, a replicated slot offer, reserve, push through primary to replica, commit, a graceful
 * restart, and reading the committed bytes back from the restarted worker.
 */
const WORKERS = [workerId('w1'), workerId('w2'), workerId('w3')];
const MASTER = masterNodeId();

function cluster() {
  const c = new InMemoryCluster({ seed: 7 });
  c.addNode(MASTER, {
    machine: masterMachine,
    init: () =>
      initialMasterState(
        testMasterConfig({
          slots: { policy: { name: 'ROUNDROBIN' }, budgetMode: 'strict', maxWorkers: 2, extraSlots: 1 },
        }),
      ),
  });
  for (const [i, id] of WORKERS.entries()) {
    c.addNode(workerKey(id), {
      machine: workerMachine,
      init: () =>
        initialWorkerState(
          testWorkerConfig(id, {
            networkLocation: `/rack${i}`,
            gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 60_000 },
          }),
        ),
    });
  }
  const lm = c.addProbe('lm-app');
  const mapper = c.addProbe('map-app-1-0-0');
  const reader = c.addProbe('reduce-app-1-0');
  c.startAll();
  return { c, lm, mapper, reader };
}

let requestId = 0;

/** Sends a request from a probe and runs until its answer arrives. */
function ask<T extends MessageType>(
  c: InMemoryCluster,
  probe: Probe,
  to: string,
  message: Message,
  answer: T,
): MessageOf<T> {
  requestId += 1;
  const id = requestId;
  c.inject({ from: probe.id, to, message, requestId: id });
  c.run({ until: () => probe.inbox.some((e) => e.inReplyTo === id), maxEvents: 10_000 });
  const reply = probe.inbox.find((e) => e.inReplyTo === id);
  assert.ok(reply, `no answer to ${message.type}`);
  assert.equal(reply.message.type, answer, `answer to ${message.type}: ${JSON.stringify(reply.message)}`);
  return reply.message as MessageOf<T>;
}

describe('master and workers in the in-memory cluster', () => {
  it('offer, reserve, replicated push, commit, graceful restart, read back', () => {
    const { c, lm, mapper, reader } = cluster();
    c.run({ maxTime: 1_000 });
    assert.equal(c.deliveredOf('RegisterWorkerResponse').filter((e) => e.message.success).length, 3);

    const offer = ask(
      c,
      lm,
      MASTER,
      {
        type: 'RequestSlots',
        appId: 'app',
        shuffleId: 1,
        partitionIds: [0, 1],
        replicate: true,
        rackAware: true,
        availableTypes: 2,
        excludedWorkers: [],
        maxWorkers: 10_000,
      },
      'RequestSlotsResponse',
    );
    assert.equal(offer.status, 'SUCCESS');
    assert.equal(offer.workerResource.length, 3, 'two workers with locations and one padding worker');

    for (const resource of offer.workerResource) {
      if (resource.primaries.length + resource.replicas.length === 0) continue;
      const reserve = ask(
        c,
        lm,
        workerKey(resource.worker),
        {
          type: 'ReserveSlots',
          appId: 'app',
          shuffleId: 1,
          primaries: resource.primaries,
          replicas: resource.replicas,
          splitThreshold: 1024 ** 3,
          splitMode: 'SOFT',
          memoryEnabled: false,
        },
        'StatusResponse',
      );
      assert.equal(reserve.status, 'SUCCESS', reserve.message);
    }

    const primary: PartitionLocation = offer.workerResource
      .flatMap((r) => r.primaries)
      .find((l) => l.partitionId === 0)!;
    assert.ok(primary.peer, 'replication gives the primary a peer');
    const pushed = [0, 1, 2].map((batchId) =>
      pushData('app-1', 0, 0, 'PRIMARY', { batchId, size: 20 + batchId, fill: batchId }),
    );
    for (const push of pushed) {
      assert.equal(ask(c, mapper, workerKey(primary.worker), push, 'PushDataResponse').status, 'SUCCESS');
    }
    const replicaWorker = workerKey(primary.peer.worker);
    const replicaFile = c
      .files(replicaWorker)
      .get(`app-1/${partitionFileName({ ...primary, mode: 'REPLICA' })}`);
    assert.equal(
      replicaFile?.bytes.length,
      pushed.reduce((n, p) => n + p.payload.length, 0),
      'the replica holds every acknowledged batch',
    );

    const commit = ask(c, lm, workerKey(primary.worker), commitFiles(['0-0'], [0]), 'CommitFilesResponse');
    assert.equal(commit.status, 'SUCCESS');

    // A graceful exit keeps the recovery store; the restarted worker serves the committed file again.
    c.admin(workerKey(primary.worker), { type: 'exit', exitType: 'GRACEFUL' });
    c.run({ until: () => !c.isUp(workerKey(primary.worker)), maxEvents: 10_000 });
    assert.equal(c.exits.at(-1)?.node, workerKey(primary.worker));
    c.restart(workerKey(primary.worker));
    c.run({ maxTime: c.now + 1_000 });

    const opened = ask(
      c,
      reader,
      workerKey(primary.worker),
      { type: 'OpenStream', shuffleKey: 'app-1', uniqueId: '0-0', mode: 'PRIMARY' },
      'OpenStreamResponse',
    );
    assert.equal(opened.status, 'SUCCESS', opened.message);
    const chunks: Uint8Array[] = [];
    for (let chunkIndex = 0; chunkIndex < opened.chunkOffsets.length - 1; chunkIndex += 1) {
      const chunk = ask(
        c,
        reader,
        workerKey(primary.worker),
        { type: 'FetchChunk', streamId: opened.streamId, chunkIndex },
        'ChunkData',
      );
      assert.equal(chunk.status, 'SUCCESS', chunk.message);
      chunks.push(chunk.bytes);
    }
    const again = ask(
      c,
      reader,
      workerKey(primary.worker),
      { type: 'FetchChunk', streamId: opened.streamId, chunkIndex: 0 },
      'ChunkData',
    );
    assert.equal(again.status, 'REQUEST_FAILED', 'the stream ended by itself once its last chunk was served');
    assert.match(again.message, /is not open/);

    // Asked for it, the open comes with chunk 0; the rest is fetched as usual.
    const inline = ask(
      c,
      reader,
      workerKey(primary.worker),
      { type: 'OpenStream', shuffleKey: 'app-1', uniqueId: '0-0', mode: 'PRIMARY', readFirstChunk: true },
      'OpenStreamResponse',
    );
    assert.equal(inline.status, 'SUCCESS', inline.message);
    assert.deepEqual(inline.chunkOffsets, opened.chunkOffsets);
    assert.deepEqual([...(inline.firstChunk ?? [])], [...chunks[0]!]);
    if (chunks.length > 1) {
      const second = ask(
        c,
        reader,
        workerKey(primary.worker),
        { type: 'FetchChunk', streamId: inline.streamId, chunkIndex: 1 },
        'ChunkData',
      );
      assert.deepEqual([...second.bytes], [...chunks[1]!]);
    }

    // A failed read of chunk 0 fails the open itself: the reader moves on to the other copy.
    c.failIo(({ effect }) => effect.kind === 'read', 'IO_ERROR', 1);
    const broken = ask(
      c,
      reader,
      workerKey(primary.worker),
      { type: 'OpenStream', shuffleKey: 'app-1', uniqueId: '0-0', mode: 'PRIMARY', readFirstChunk: true },
      'OpenStreamResponse',
    );
    assert.equal(broken.status, 'REQUEST_FAILED');
    assert.equal(broken.firstChunk, undefined);
    assert.match(broken.message, /IO_ERROR/);
    const frames = decodeBatchFrames(Uint8Array.from(chunks.flatMap((chunk) => [...chunk])));
    assert.ok(frames.ok, 'frames.ok');
    assert.deepEqual(
      frames.value.map((f) => [f.batchId, f.payload.length]),
      [
        [0, 20],
        [1, 21],
        [2, 22],
      ],
    );
  });

  it('a worker that stops heartbeating is lost at the master and no longer offered', () => {
    const { c, lm } = cluster();
    c.run({ maxTime: 1_000 });
    c.crash(workerKey(WORKERS[0]!));
    c.run({ maxTime: 250_000 });
    const offer = ask(
      c,
      lm,
      MASTER,
      {
        type: 'RequestSlots',
        appId: 'app',
        shuffleId: 2,
        partitionIds: [0, 1, 2],
        replicate: false,
        rackAware: false,
        availableTypes: 2,
        excludedWorkers: [],
        maxWorkers: 10_000,
      },
      'RequestSlotsResponse',
    );
    assert.equal(offer.status, 'SUCCESS');
    assert.ok(
      !offer.workerResource.some((r) => workerKey(r.worker) === workerKey(WORKERS[0]!)),
      '!offer.workerResource.some((r) => workerKey(r.worker) === workerKey(WORKERS[0]!))',
    );
    assert.ok(
      c.logs.some((l) => l.node === MASTER && l.event === 'master.worker.lost'),
      "c.logs.some((l) => l.node === MASTER && l.event === 'master.worker.lost')",
    );
  });
});
