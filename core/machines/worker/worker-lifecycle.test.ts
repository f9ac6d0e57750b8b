import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { masterNodeId } from '../../protocol/node-ids.ts';
import type { Effect } from '../effects.ts';
import {
  initialWorkerState,
  RECOVERY_KEY_PREFIX,
  workerMachine,
  type WorkerConfig,
  type WorkerMachineState,
} from './index.ts';
import { testWorkerConfig } from './testing.ts';
import {
  answeringExitReport,
  CLIENT,
  exitsIn,
  Harness,
  KEY,
  location,
  MAPPER,
  metricNames,
  ofKind,
  onlySent,
  pushData,
  SELF,
  sentOf,
  commitFiles,
} from './test-kit.ts';

const MASTER = masterNodeId();
const READER = 'reduce-app-1-0';

function fresh(overrides: Partial<WorkerConfig> = {}) {
  return new Harness(workerMachine, initialWorkerState(testWorkerConfig(SELF, overrides)));
}

function registered(overrides: Partial<WorkerConfig> = {}) {
  const harness = fresh(overrides);
  const register = onlySent(harness.start(), 'RegisterWorker');
  harness.receive(
    MASTER,
    { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
    { inReplyTo: register.requestId! },
  );
  return harness;
}

/** Reserves partition 0 (primary), pushes `batches` batches to it and acknowledges their writes. */
function withData(harness: Harness<WorkerMachineState>, batches = 2, options: { memory?: boolean } = {}) {
  const storage =
    options.memory === true ? { type: 'HDD' as const, mountPoint: '', availableTypes: 3 } : undefined;
  harness.completeIo(
    harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', SELF, storage === undefined ? {} : { storage })],
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: options.memory === true,
      },
      { requestId: 1 },
    ),
  );
  const written: Uint8Array[] = [];
  for (let batchId = 0; batchId < batches; batchId += 1) {
    const push = pushData(KEY, 0, 0, 'PRIMARY', { batchId, size: 10 + batchId, fill: batchId });
    written.push(push.payload);
    harness.completeIo(harness.receive(MAPPER, push, { requestId: 100 + batchId }));
  }
  return written;
}

function commit(harness: Harness<WorkerMachineState>): Effect[] {
  const effects = harness.receive(CLIENT, commitFiles(['0-0'], [0]), { requestId: 50 });
  return [...effects, ...harness.completeIo(effects)];
}

describe('worker: registration and heartbeats', () => {
  it('registers at start and heartbeats every interval once registered', () => {
    const harness = fresh();
    const started = harness.start();
    const register = onlySent(started, 'RegisterWorker');
    assert.equal(register.to, MASTER);
    assert.equal(register.message.disks.length, 2);
    assert.equal(
      ofKind(started, 'setTimer').some((t) => t.name === 'heartbeat'),
      false,
      'no heartbeat before registration',
    );
    const ok = harness.receive(
      MASTER,
      { type: 'RegisterWorkerResponse', success: true, message: 'ok' },
      { inReplyTo: register.requestId! },
    );
    assert.deepEqual(
      ofKind(ok, 'setTimer')
        .filter((t) => t.name === 'heartbeat')
        .map((t) => t.at),
      [30_000],
    );
    const beat = harness.timer('heartbeat', 30_000);
    const heartbeat = onlySent(beat, 'WorkerHeartbeat');
    assert.equal(heartbeat.message.state, 'Normal');
    assert.deepEqual(heartbeat.message.activeShuffleKeys, []);
    assert.ok(
      ofKind(beat, 'setTimer').some((t) => t.name === 'heartbeat' && t.at === 60_000),
      "ofKind(beat, 'setTimer').some((t) => t.name === 'heartbeat' && t.at === 60_000)",
    );
  });

  it('reports each disk with its own write latency and the slots it holds', () => {
    const harness = registered();
    const reserve = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 1,
        primaries: [location(0, 0, 'PRIMARY', SELF)],
        replicas: [],
        splitThreshold: 1024 ** 3,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 1 },
    );
    const [create] = ofKind(reserve, 'createFile');
    harness.ioDone(create!.op);
    const [write] = ofKind(
      harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY'), { requestId: 2 }),
      'write',
    );
    harness.now = 5;
    harness.ioDone(write!.op);
    const disks = onlySent(harness.timer('heartbeat', 30_000), 'WorkerHeartbeat').message.disks;
    const used = disks.find((d) => d.mountPoint === create!.file.mountPoint)!;
    const other = disks.find((d) => d.mountPoint !== create!.file.mountPoint)!;
    assert.equal(used.avgFlushTimeNs, 5e6);
    assert.equal(used.activeSlots, 1);
    assert.equal(used.usableBytes, used.totalBytes - write!.bytes.length);
    assert.equal(other.avgFlushTimeNs, 0);
    assert.equal(other.activeSlots, 0);
  });

  it('retries registration and exits with the reason once the register timeout is spent', () => {
    const harness = fresh({ register: { retryIntervalMs: 2_000, timeoutMs: 5_000 } });
    let register = onlySent(harness.start(), 'RegisterWorker');
    const refused = harness.receive(
      MASTER,
      { type: 'RegisterWorkerResponse', success: false, message: 'host denied' },
      { inReplyTo: register.requestId! },
    );
    assert.ok(
      metricNames(refused).includes('RegisterWithMasterFailCount'),
      "metricNames(refused).includes('RegisterWithMasterFailCount')",
    );
    assert.ok(
      ofKind(refused, 'setTimer').some((t) => t.name === 'register' && t.at === 2_000),
      "ofKind(refused, 'setTimer').some((t) => t.name === 'register' && t.at === 2_000)",
    );
    register = onlySent(harness.timer('register', 2_000), 'RegisterWorker');
    harness.now = 5_000;
    const gaveUp = harness.step({
      kind: 'sendFailed',
      to: MASTER,
      requestId: register.requestId!,
      message: register.message,
    });
    const [exit] = ofKind(gaveUp, 'exit');
    assert.equal(exit?.code, 1);
    assert.match(exit.reason, /could not register/);
  });

  it('registers again when the master no longer knows it', () => {
    const harness = registered();
    const heartbeat = onlySent(harness.timer('heartbeat', 30_000), 'WorkerHeartbeat');
    const answer = harness.receive(
      MASTER,
      { type: 'WorkerHeartbeatResponse', registered: false, expiredShuffleKeys: [], workerEvent: 'None' },
      { inReplyTo: heartbeat.requestId! },
    );
    assert.equal(sentOf(answer, 'RegisterWorker').length, 1);
  });

  it('deletes the files and recovery entry of shuffles the master says expired', () => {
    const harness = registered();
    withData(harness);
    commit(harness);
    const heartbeat = onlySent(harness.timer('heartbeat', 30_000), 'WorkerHeartbeat');
    assert.deepEqual(heartbeat.message.activeShuffleKeys, [KEY]);
    const answer = harness.receive(
      MASTER,
      { type: 'WorkerHeartbeatResponse', registered: true, expiredShuffleKeys: [KEY], workerEvent: 'None' },
      { inReplyTo: heartbeat.requestId! },
    );
    assert.equal(ofKind(answer, 'deleteFile').length, 1);
    assert.deepEqual(
      ofKind(answer, 'persist').map((p) => [p.store, p.key, p.value]),
      [['recovery', `${RECOVERY_KEY_PREFIX}${KEY}`, null]],
    );
    assert.equal(harness.state.shuffles.size, 0);
  });
});

describe('worker: CommitFiles and reads', () => {
  it('flushes, persists the committed files, then answers with size and chunk offsets', () => {
    const harness = registered();
    const written = withData(harness, 3);
    const first = harness.receive(CLIENT, commitFiles(['0-0', '9-0'], [0]), { requestId: 50 });
    const [flush] = ofKind(first, 'flush');
    assert.ok(flush, 'flush');
    assert.equal(sentOf(first, 'CommitFilesResponse').length, 0, 'no answer before the flush completes');
    const done = harness.ioDone(flush.op);
    const kinds = done.map((e) => (e.kind === 'send' ? e.message.type : e.kind));
    assert.ok(kinds.indexOf('persist') < kinds.indexOf('CommitFilesResponse'), 'durable before acknowledged');
    const answer = onlySent(done, 'CommitFilesResponse').message;
    const total = written.reduce((sum, batch) => sum + batch.length, 0);
    assert.equal(answer.status, 'PARTIAL_SUCCESS');
    assert.deepEqual(answer.failedPrimaryIds, ['9-0']);
    assert.equal(answer.committedPrimaries[0]!.bytes, total);
    assert.deepEqual(answer.committedPrimaries[0]!.chunkOffsets, [0, total]);
    assert.ok(
      metricNames(done).includes('CommitFilesFailCount'),
      "metricNames(done).includes('CommitFilesFailCount')",
    );
  });

  it('commits the acknowledged prefix of a file whose later write failed', () => {
    const harness = registered();
    const written = withData(harness, 2);
    const push = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 7 }), { requestId: 9 });
    harness.ioFailed(ofKind(push, 'write')[0]!.op);
    const answer = onlySent(commit(harness), 'CommitFilesResponse').message;
    assert.equal(answer.status, 'SUCCESS');
    assert.equal(answer.committedPrimaries[0]!.bytes, written[0]!.length + written[1]!.length);
  });

  it('serves committed files only, chunk by chunk', () => {
    const harness = registered();
    const open = () =>
      harness.receive(
        READER,
        { type: 'OpenStream', shuffleKey: KEY, uniqueId: '0-0', mode: 'PRIMARY' },
        { requestId: 60 },
      );
    withData(harness, 2);
    const early = onlySent(open(), 'OpenStreamResponse').message;
    assert.equal(early.status, 'OPEN_STREAM_FAILED');
    assert.match(early.message, /not committed/);
    commit(harness);
    const opened = onlySent(open(), 'OpenStreamResponse').message;
    assert.equal(opened.status, 'SUCCESS');
    const fetch = harness.receive(
      READER,
      { type: 'FetchChunk', streamId: opened.streamId, chunkIndex: 0 },
      { requestId: 61 },
    );
    const [read] = ofKind(fetch, 'read');
    assert.equal(read!.offset, 0);
    assert.equal(read!.length, opened.chunkOffsets[1]);
    const chunk = onlySent(
      harness.ioDone(read!.op, new Uint8Array(read!.length).fill(1)),
      'ChunkData',
    ).message;
    assert.equal(chunk.status, 'SUCCESS');
    assert.equal(chunk.bytes.length, read!.length);
    const outOfRange = harness.receive(
      READER,
      { type: 'FetchChunk', streamId: opened.streamId, chunkIndex: 1 },
      { requestId: 62 },
    );
    assert.equal(onlySent(outOfRange, 'ChunkData').message.status, 'REQUEST_FAILED');
  });

  it('refuses a chunk read that comes back short rather than hand the reader a torn chunk', () => {
    const harness = registered();
    withData(harness, 1);
    commit(harness);
    const opened = onlySent(
      harness.receive(
        READER,
        { type: 'OpenStream', shuffleKey: KEY, uniqueId: '0-0', mode: 'PRIMARY' },
        { requestId: 1 },
      ),
      'OpenStreamResponse',
    ).message;
    const [read] = ofKind(
      harness.receive(
        READER,
        { type: 'FetchChunk', streamId: opened.streamId, chunkIndex: 0 },
        { requestId: 2 },
      ),
      'read',
    );
    const short = harness.ioDone(read!.op, new Uint8Array(read!.length - 1));
    assert.equal(onlySent(short, 'ChunkData').message.status, 'REQUEST_FAILED');
    assert.ok(
      metricNames(short).includes('FetchChunkFailCount'),
      "metricNames(short).includes('FetchChunkFailCount')",
    );
  });

  it('serves the committed files again after a restart from its recovery store', () => {
    const before = registered();
    withData(before, 2);
    const persisted = ofKind(commit(before), 'persist');
    const store = new Map(persisted.map((p) => [p.key, p.value!]));
    const serves = (overrides: Partial<WorkerConfig>) => {
      const after = fresh(overrides);
      after.start(store);
      const answer = onlySent(
        after.receive(
          READER,
          { type: 'OpenStream', shuffleKey: KEY, uniqueId: '0-0', mode: 'PRIMARY' },
          { requestId: 1 },
        ),
        'OpenStreamResponse',
      ).message;
      return answer.status;
    };
    assert.equal(serves({}), 'SUCCESS');
    // The planted bug the simulator must catch: the restarted worker forgets what it had committed.
    assert.equal(serves({ plantedBug: 'restart-forgets-committed' }), 'OPEN_STREAM_FAILED');
  });

  it('rejects a malformed recovery entry with a log line naming the key, and keeps the others', () => {
    const before = registered();
    withData(before, 1);
    const [good] = ofKind(commit(before), 'persist');
    const after = fresh();
    const effects = after.start(
      new Map([
        [good!.key, good!.value!],
        [`${RECOVERY_KEY_PREFIX}bad-2`, '{"version":9}'],
      ]),
    );
    const rejected = ofKind(effects, 'log').find((l) => l.event === 'worker.recovery.rejected');
    assert.ok(rejected, 'rejected');
    assert.match(String(rejected.fields?.error), /bad-2/);
    assert.equal(after.state.shuffles.size, 1);
  });

  it('names keys it never writes in one error line (another release’s layout, another store), and restores the rest', () => {
    const before = registered();
    withData(before, 1);
    const [good] = ofKind(commit(before), 'persist');
    const after = fresh();
    const foreign = Array.from({ length: 7 }, (_, i) => [`v2/shuffles/app-${i}-0`, '{}'] as const);
    const effects = after.start(new Map([[good!.key, good!.value!], ...foreign]));
    const lines = ofKind(effects, 'log').filter((l) => l.event === 'worker.recovery.unknownKeys');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, 'error');
    assert.equal(lines[0]!.fields?.count, 7);
    assert.deepEqual(
      lines[0]!.fields?.examples,
      foreign.slice(0, 5).map(([key]) => key),
    );
    assert.equal(after.state.shuffles.size, 1, 'the entry it reads is restored');
    const clean = fresh().start(new Map([[good!.key, good!.value!]]));
    assert.equal(ofKind(clean, 'log').filter((l) => l.event === 'worker.recovery.unknownKeys').length, 0);
  });
});

describe('worker: leaving the cluster', () => {
  it('graceful: reports unavailable, refuses new work, waits for commits, keeps the recovery store, exits', () => {
    const harness = registered({
      gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 480_000 },
    });
    withData(harness, 1);
    const leaving = harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'NONE' } });
    assert.equal(sentOf(leaving, 'ReportWorkerUnavailable').length, 1);
    assert.equal(harness.state.lifecycle.state, 'InGraceful');
    const push = harness.receive(MAPPER, pushData(KEY, 0, 0, 'PRIMARY', { batchId: 5 }), { requestId: 1 });
    assert.equal(onlySent(push, 'PushDataResponse').message.status, 'HARD_SPLIT');
    const reserve = harness.receive(
      CLIENT,
      {
        type: 'ReserveSlots',
        appId: 'app',
        shuffleId: 2,
        primaries: [location(0, 0, 'PRIMARY', SELF)],
        replicas: [],
        splitThreshold: 1,
        splitMode: 'SOFT',
        memoryEnabled: false,
      },
      { requestId: 2 },
    );
    assert.equal(onlySent(reserve, 'StatusResponse').message.status, 'WORKER_SHUTDOWN');
    assert.equal(exitsIn(harness.timer('drain:check', 1_000)), 0, 'an uncommitted partition holds the exit');
    commit(harness);
    const exit = harness.timer('drain:check', 2_000);
    assert.equal(exitsIn(exit), 1);
    const persisted = ofKind(exit, 'persist');
    assert.equal(persisted.length, 1);
    assert.notEqual(persisted[0]!.value, null, 'the committed files stay in the recovery store');
    assert.equal(ofKind(exit, 'deleteFile').length, 0);
  });

  it('graceful: moves committed memory files to disk before it persists and exits', () => {
    const memory = {
      capacityBytes: 1024 * 1024,
      maxFileBytes: 1024 * 1024,
      evictRatio: 0.9,
      refuseImplicitMemory: false,
    };
    const harness = registered({
      memory,
      gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 480_000 },
    });
    withData(harness, 1, { memory: true });
    commit(harness);
    const leaving = harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    const [move] = ofKind(leaving, 'moveFile');
    assert.equal(move?.to.tier, 'HDD');
    assert.equal(exitsIn(leaving), 0);
    const done = harness.ioDone(move.op);
    const [record] = ofKind(done, 'persist');
    assert.match(record!.value!, /"tier":"HDD"/);
    assert.equal(exitsIn(done), 1);
  });

  it('graceful: exits at the deadline even with partitions left uncommitted', () => {
    const harness = registered({
      gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 10_000 },
    });
    withData(harness, 1);
    harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    const exit = harness.timer('drain:deadline', 10_000);
    assert.equal(exitsIn(exit), 1);
  });

  it('immediately: reports lost, deletes its data and recovery store, and exits at once', () => {
    const harness = registered();
    withData(harness, 1);
    commit(harness);
    const effects = harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'IMMEDIATELY' } });
    assert.equal(sentOf(effects, 'ReportWorkerLost').length, 1);
    assert.equal(ofKind(effects, 'deleteFile').length, 1);
    assert.deepEqual(
      ofKind(effects, 'persist').map((p) => p.value),
      [null],
    );
    assert.equal(exitsIn(effects), 1);
  });

  it('tells the master it exited (a heartbeat in state Exit) and exits on its answer, or at the deadline', () => {
    const answered = registered();
    const leaving = answered.step({ kind: 'admin', command: { type: 'exit', exitType: 'IMMEDIATELY' } });
    const [report] = sentOf(leaving, 'WorkerHeartbeat');
    assert.equal(report?.message.state, 'Exit');
    assert.equal(ofKind(leaving, 'exit').length, 0, 'not before the master has the report');
    const answer = answered.receive(
      MASTER,
      { type: 'WorkerHeartbeatResponse', registered: false, expiredShuffleKeys: [], workerEvent: 'None' },
      { inReplyTo: report.requestId! },
    );
    assert.equal(ofKind(answer, 'exit').length, 1);
    assert.equal(sentOf(answer, 'RegisterWorker').length, 0, 'an exiting worker does not register again');

    const unanswered = registered();
    const sent = unanswered.step({ kind: 'admin', command: { type: 'exit', exitType: 'IMMEDIATELY' } });
    const [lastReport] = sentOf(sent, 'WorkerHeartbeat');
    const deadline = unanswered.timer(`req:${lastReport!.requestId!}`, 60_000);
    assert.equal(ofKind(deadline, 'exit').length, 1, 'a master that does not answer does not hold the exit');
  });

  it('answers an exit command before its exit effect, so that a driver stopping there still answers', () => {
    const harness = registered();
    const effects = answeringExitReport(
      harness,
      harness.step({
        kind: 'admin',
        command: { type: 'exit', exitType: 'IMMEDIATELY' },
        commandId: 7,
      }),
    );
    const kinds = effects.map((effect) => effect.kind);
    const reply = kinds.indexOf('adminReply');
    assert.ok(reply >= 0, 'the command is answered');
    assert.ok(reply < kinds.indexOf('exit'), `adminReply before exit: ${kinds.join(', ')}`);
  });

  it('decommission (event from the master): reports it, waits until it holds no shuffle, then exits', () => {
    const harness = registered();
    withData(harness, 1);
    const beat = onlySent(harness.timer('heartbeat', 30_000), 'WorkerHeartbeat');
    const event = harness.receive(
      MASTER,
      {
        type: 'WorkerHeartbeatResponse',
        registered: true,
        expiredShuffleKeys: [],
        workerEvent: 'Decommission',
      },
      { inReplyTo: beat.requestId! },
    );
    assert.equal(sentOf(event, 'ReportWorkerDecommission').length, 1);
    assert.equal(harness.state.lifecycle.state, 'InDecommission');
    assert.equal(exitsIn(event), 0);
    const next = onlySent(harness.timer('heartbeat', 60_000), 'WorkerHeartbeat');
    assert.equal(next.message.state, 'InDecommission');
    const expired = harness.receive(
      MASTER,
      {
        type: 'WorkerHeartbeatResponse',
        registered: true,
        expiredShuffleKeys: [KEY],
        workerEvent: 'Decommission',
      },
      { inReplyTo: next.requestId! },
    );
    assert.equal(exitsIn(expired), 1);
  });

  it('decommission then idle: becomes Idle once drained, and Normal again on recommission', () => {
    const harness = registered();
    const beat = onlySent(harness.timer('heartbeat', 30_000), 'WorkerHeartbeat');
    harness.receive(
      MASTER,
      {
        type: 'WorkerHeartbeatResponse',
        registered: true,
        expiredShuffleKeys: [],
        workerEvent: 'DecommissionThenIdle',
      },
      { inReplyTo: beat.requestId! },
    );
    assert.equal(harness.state.lifecycle.state, 'Idle', 'it holds nothing, so it drains at once');
    const next = onlySent(harness.timer('heartbeat', 60_000), 'WorkerHeartbeat');
    harness.receive(
      MASTER,
      {
        type: 'WorkerHeartbeatResponse',
        registered: true,
        expiredShuffleKeys: [],
        workerEvent: 'Recommission',
      },
      { inReplyTo: next.requestId! },
    );
    assert.equal(harness.state.lifecycle.state, 'Normal');
  });

  it('logs a refused transition instead of acting on it', () => {
    const harness = registered({
      gracefulShutdown: { enabled: true, checkIntervalMs: 1_000, timeoutMs: 480_000 },
    });
    withData(harness, 1);
    harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'GRACEFUL' } });
    const effects = harness.step({ kind: 'admin', command: { type: 'exit', exitType: 'DECOMMISSION' } });
    assert.equal(harness.state.lifecycle.state, 'InGraceful');
    assert.ok(
      ofKind(effects, 'log').some((l) => l.event === 'worker.lifecycle.refused'),
      "ofKind(effects, 'log').some((l) => l.event === 'worker.lifecycle.refused')",
    );
  });
});
