// The pure side of the management interface: machine states projected into response shapes, the messages of bad
// input, and the thread dump. Every projection is validated against the project's OpenAPI document with objects
// closed to fields the document does not list (the serializer would drop them silently).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseDynamicConfig } from '../../conf/index.ts';
import { workerKey, type DiskInfo, type PartitionLocation, type WorkerId } from '../../core/domain/index.ts';
import {
  ALLOW_ALL_HOSTS,
  emptyApplications,
  emptyRegistry,
  excludeWorkers,
  markWorkerLost,
  recordApplicationHeartbeat,
  recordApplicationIdentity,
  registerShuffle,
  registerWorker,
  reportWorkersDecommissioning,
  reportWorkersUnavailable,
  sendWorkerEvent,
  type WorkerRegistry,
} from '../../core/lifecycle/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import type { PartitionFile, WorkerMachineState } from '../../core/machines/worker/state.ts';
import { fieldName, mediaTypeOf, nearestPath, schemaErrorMessage } from './errors.ts';
import { dynamicConfigResponse } from './projections/conf.ts';
import {
  applicationsResponse,
  excludeCommand,
  hostnamesResponse,
  mastersResponse,
  shufflesResponse,
  workerEventCommand,
  workerEventsResponse,
  workersResponse,
} from './projections/master.ts';
import {
  exitCommand,
  unavailablePeersResponse,
  workerApplicationsResponse,
  workerInfoResponse,
  workerPartitionsResponse,
  workerShufflesResponse,
} from './projections/worker.ts';
import { confAt, masterStateAt, WORKER_ID, workerStateAt } from './testing/fixtures.ts';
import { responseValidator } from './testing/openapi-validator.ts';
import { EventLoopMonitor, handleText, threadDump, threadStacksOf } from './thread-dump.ts';

const masterDoc = responseValidator('master', { closedObjects: true });
const workerDoc = responseValidator('worker', { closedObjects: true });

function valid(check: string | undefined): void {
  assert.equal(check, undefined, check);
}

const DISK: DiskInfo = {
  mountPoint: '/mnt/disk1',
  type: 'HDD',
  usableBytes: 5 * 2 ** 30,
  totalBytes: 10 * 2 ** 30,
  status: 'HEALTHY',
  avgFlushTimeNs: 1200,
  avgFetchTimeNs: 800,
  activeSlots: 7,
};

const id = (n: number): WorkerId => ({
  host: `w${n}`,
  rpcPort: 100 * n + 1,
  pushPort: 100 * n + 2,
  fetchPort: 100 * n + 3,
  replicatePort: 100 * n + 4,
});

/** Five workers through the registry's own operations: w1 lost, w2 manually excluded, w3 shutting down, w4
 * decommissioning, w5 with a pending event. */
function busyRegistry(): WorkerRegistry {
  let registry = emptyRegistry();
  for (let n = 1; n <= 5; n += 1) {
    registry = registerWorker(
      registry,
      { id: id(n), disks: [DISK], networkLocation: '' },
      1_000 * n,
      ALLOW_ALL_HOSTS,
    ).registry;
  }
  registry = markWorkerLost(registry, workerKey(id(1)), 9_000).registry;
  registry = excludeWorkers(registry, { add: [workerKey(id(2))], remove: [] }, 9_100).registry;
  registry = reportWorkersUnavailable(registry, [workerKey(id(3))], 9_200).registry;
  registry = reportWorkersDecommissioning(registry, [workerKey(id(4))], 9_300).registry;
  registry = sendWorkerEvent(registry, 'Decommission', [workerKey(id(5))], 9_400).registry;
  return registry;
}

function busyMaster(): MasterState {
  const base = masterStateAt(confAt('master', '0.6.0'));
  let applications = emptyApplications();
  applications = recordApplicationHeartbeat(
    applications,
    { appId: 'app-1', bytesWritten: 0, fileCount: 0 },
    5_000,
  ).registry;
  applications = registerShuffle(applications, 'app-1', 0, 5_000).registry;
  applications = registerShuffle(applications, 'app-1', 3, 5_001).registry;
  return { ...base, durable: { ...base.durable, workers: busyRegistry(), applications } };
}

describe('master projections', () => {
  it('GET /api/v1/workers lists each set of the registry', () => {
    const response = workersResponse(busyMaster(), 20_000);
    valid(masterDoc.check('GET', '/api/v1/workers', 200, response));
    const hosts = (list: readonly { host: string }[]): string[] => list.map((worker) => worker.host);
    assert.deepEqual(hosts(response.workers), ['w2', 'w3', 'w4', 'w5']);
    assert.deepEqual(
      response.lostWorkers.map((lost) => [lost.worker.host, lost.timestamp]),
      [['w1', 9_000]],
    );
    assert.deepEqual(hosts(response.excludedWorkers), ['w2']);
    assert.deepEqual(hosts(response.manualExcludedWorkers), ['w2']);
    assert.deepEqual(hosts(response.shutdownWorkers), ['w3']);
    assert.deepEqual(hosts(response.decommissioningWorkers), ['w4']);
    const w2 = response.workers[0]!;
    assert.equal(w2.slotUsed, 7);
    assert.equal(w2.heartbeatElapsedSeconds, 18);
    assert.equal(w2.workerState, 'Normal');
    assert.equal(w2.networkLocation, '/default-rack');
    assert.match(w2.diskInfos!['/mnt/disk1']!, /type: HDD, status: HEALTHY, usableSpace: 5\.0 GiB/);
  });

  it('GET /api/v1/workers/events lists pending events with their time', () => {
    const response = workerEventsResponse(busyMaster(), 20_000);
    valid(masterDoc.check('GET', '/api/v1/workers/events', 200, response));
    assert.deepEqual(
      response.workerEvents.map((entry) => [entry.worker.host, entry.event.eventType, entry.event.eventTime]),
      [['w5', 'Decommission', 9_400]],
    );
  });

  it('applications, shuffles and the master group', () => {
    const state = busyMaster();
    const apps = applicationsResponse(state);
    valid(masterDoc.check('GET', '/api/v1/applications', 200, apps));
    assert.deepEqual(apps.applications, [{ appId: 'app-1', lastHeartbeatTimestamp: 5_000 }]);
    const shuffles = shufflesResponse(state);
    valid(masterDoc.check('GET', '/api/v1/shuffles', 200, shuffles));
    assert.deepEqual(shuffles.shuffleIds, ['app-1-0', 'app-1-3']);
    valid(
      masterDoc.check('GET', '/api/v1/masters', 200, mastersResponse({ nodeId: 'm', rpcAddress: 'h:1' })),
    );
    // A member of a group: the leader as the election named it, each member's state, the etcd revision.
    const members = ['m1', 'm2', 'm3'].map((id, i) => ({
      id,
      address: `h${i}:9097`,
      internalAddress: `h${i}:9872`,
      role: (['LEADER', 'FOLLOWER', 'UNKNOWN'] as const)[i]!,
    }));
    const group = mastersResponse({
      nodeId: 'master-0',
      rpcAddress: 'h1:9097',
      group: () => ({ groupId: '/svc/', leader: { id: 'm1', address: 'h0:9097' }, revision: 42, members }),
    });
    valid(masterDoc.check('GET', '/api/v1/masters', 200, group));
    assert.deepEqual(
      group.masterCommitInfo.map((m) => [m.id, m.startUpRole, m.commitIndex, m.clientAddress]),
      [
        ['m1', 'LEADER', 42, 'h0:9097'],
        ['m2', 'FOLLOWER', 42, 'h1:9097'],
        ['m3', 'UNKNOWN', 42, 'h2:9097'],
      ],
    );
    // No leader known yet: the reference's schema leaves it out.
    const leaderless = mastersResponse({
      nodeId: 'master-0',
      rpcAddress: 'h1:9097',
      group: () => ({ groupId: '/svc/', leader: null, revision: 0, members }),
    });
    valid(masterDoc.check('GET', '/api/v1/masters', 200, leaderless));
    assert.equal(leaderless.leader, undefined, 'no leader named');
  });

  it('hostnames are the hosts the running applications registered, each once, and never a secret', () => {
    const state = busyMaster();
    let applications = recordApplicationIdentity(
      state.durable.applications,
      'app-2',
      { hostname: 'b-host', secret: 'x' },
      1,
    );
    applications = recordApplicationIdentity(applications, 'app-3', { hostname: 'a-host' }, 1);
    applications = recordApplicationIdentity(applications, 'app-4', { hostname: 'b-host' }, 1);
    const response = hostnamesResponse({ ...state, durable: { ...state.durable, applications } });
    valid(masterDoc.check('GET', '/api/v1/applications/hostnames', 200, response));
    assert.deepEqual(response, { hostnames: ['a-host', 'b-host'] });
    const listed = applicationsResponse({ ...state, durable: { ...state.durable, applications } });
    valid(masterDoc.check('GET', '/api/v1/applications', 200, listed));
    assert.doesNotMatch(JSON.stringify(listed), /secret|"x"/);
  });

  it('an empty master validates too', () => {
    const state = masterStateAt(confAt('master', '0.6.0'));
    valid(masterDoc.check('GET', '/api/v1/workers', 200, workersResponse(state, 0)));
    valid(masterDoc.check('GET', '/api/v1/workers/events', 200, workerEventsResponse(state, 0)));
  });

  it('requests become the machine’s commands, worker ids as keys', () => {
    assert.deepEqual(excludeCommand({ add: [id(1)], remove: [id(2)] }), {
      type: 'excludeWorkers',
      add: ['w1:101:102:103:104'],
      remove: ['w2:201:202:203:204'],
    });
    assert.deepEqual(excludeCommand({}), { type: 'excludeWorkers', add: [], remove: [] });
    assert.deepEqual(workerEventCommand({ eventType: 'DECOMMISSIONTHENIDLE', workers: [id(3)] }), {
      type: 'workerEvent',
      eventType: 'DECOMMISSIONTHENIDLE',
      workers: ['w3:301:302:303:304'],
    });
    assert.deepEqual(exitCommand(undefined), { type: 'exit', exitType: 'NONE' });
    assert.deepEqual(exitCommand({ type: 'GRACEFUL' }), { type: 'exit', exitType: 'GRACEFUL' });
  });
});

function workerWithFiles(): WorkerMachineState {
  const base = workerStateAt(confAt('worker', '0.6.0'));
  const peer = { ...WORKER_ID, host: 'peer' };
  const location = (partitionId: number, mode: 'PRIMARY' | 'REPLICA'): PartitionLocation => ({
    partitionId,
    epoch: 1,
    worker: WORKER_ID,
    mode,
    storage: { type: 'HDD', mountPoint: '/mnt/disk1', availableTypes: 2 },
    peer: {
      partitionId,
      epoch: 1,
      worker: peer,
      mode: mode === 'PRIMARY' ? 'REPLICA' : 'PRIMARY',
      storage: { type: 'HDD', mountPoint: '/mnt/disk1', availableTypes: 2 },
    },
  });
  const file = (
    partitionId: number,
    mode: 'PRIMARY' | 'REPLICA',
    status: PartitionFile['status'],
  ): PartitionFile => ({
    name: `${partitionId}-1-${mode === 'PRIMARY' ? 0 : 1}`,
    location: location(partitionId, mode),
    file: { id: `app-9-2/${partitionId}`, tier: 'HDD', mountPoint: '/mnt/disk1' },
    status,
    bytes: 100,
    chunkStarts: [0],
    queue: [],
  });
  const files = [
    file(0, 'PRIMARY', 'open'),
    file(1, 'REPLICA', 'committing'),
    file(2, 'PRIMARY', 'committed'),
  ];
  return {
    ...base,
    registration: { status: 'registered' },
    lifecycle: { state: 'InDecommission', since: 4_242, exitKind: 'DECOMMISSION' },
    shuffles: new Map([
      [
        'app-9-2',
        {
          appId: 'app-9',
          shuffleId: 2,
          splitThreshold: 1 << 30,
          splitMode: 'SOFT' as const,
          memoryEnabled: false,
          user: undefined,
          mapAttempts: undefined,
          files: new Map(files.map((f) => [f.name, f])),
        },
      ],
    ]),
    unavailablePeers: new Map([[workerKey(peer), 7_000]]),
  };
}

describe('worker projections', () => {
  it('GET /api/v1/workers reports registration and the lifecycle table’s flags', () => {
    const fresh = workerInfoResponse(workerStateAt(confAt('worker', '0.6.0')));
    valid(workerDoc.check('GET', '/api/v1/workers', 200, fresh));
    assert.deepEqual([fresh.isRegistered, fresh.isShutdown, fresh.isDecommissioning], [false, false, false]);
    const leaving = workerInfoResponse(workerWithFiles());
    valid(workerDoc.check('GET', '/api/v1/workers', 200, leaving));
    assert.deepEqual(
      [leaving.isRegistered, leaving.isShutdown, leaving.isDecommissioning],
      [true, true, true],
    );
    assert.equal(leaving.workerState, 'InDecommission');
    assert.equal(leaving.workerStateStartTime, 4_242);
    assert.equal(leaving.internalPort, WORKER_ID.rpcPort);
  });

  it('GET /api/v1/workers shows the usage of each user its clients named, with their applications', () => {
    const base = workerWithFiles();
    const shuffle = base.shuffles.get('app-9-2')!;
    const state: WorkerMachineState = {
      ...base,
      shuffles: new Map([
        ['app-9-2', { ...shuffle, user: { tenant: 't', name: 'alice' } }],
        // Its client named no user (a client before svc sent one): left out, as the master leaves it out.
        ['app-8-0', { ...shuffle, appId: 'app-8', shuffleId: 0 }],
      ]),
    };
    const info = workerInfoResponse(state);
    valid(workerDoc.check('GET', '/api/v1/workers', 200, info));
    const app9 = { diskBytesWritten: 300, diskFileCount: 3, hdfsBytesWritten: 0, hdfsFileCount: 0 };
    assert.deepEqual(info.resourceConsumptions, {
      't/alice': { ...app9, subResourceConsumptions: { 'app-9': app9 } },
    });
    assert.deepEqual(workerInfoResponse(workerStateAt(confAt('worker', '0.6.0'))).resourceConsumptions, {});
  });

  it('shuffles, applications, living partitions and unavailable peers', () => {
    const state = workerWithFiles();
    const shuffles = workerShufflesResponse(state);
    valid(workerDoc.check('GET', '/api/v1/shuffles', 200, shuffles));
    assert.deepEqual(shuffles.shuffleIds, ['app-9-2']);
    const apps = workerApplicationsResponse(state);
    valid(workerDoc.check('GET', '/api/v1/applications', 200, apps));
    assert.deepEqual(apps.applications, ['app-9']);
    const partitions = workerPartitionsResponse(state);
    valid(workerDoc.check('GET', '/api/v1/shuffles/partitions', 200, partitions));
    // The committed file is no longer living.
    assert.deepEqual(partitions, {
      primaryPartitions: {
        'app-9-2': {
          '0-1': {
            idEpoch: '0-1',
            hostAndPorts: 'w1-1001-1002-1003-1004',
            mode: 'PRIMARY',
            peer: 'peer-1001-1002-1003-1004',
            storage: 'HDD',
          },
        },
      },
      replicaPartitions: {
        'app-9-2': {
          '1-1': {
            idEpoch: '1-1',
            hostAndPorts: 'w1-1001-1002-1003-1004',
            mode: 'REPLICA',
            peer: 'peer-1001-1002-1003-1004',
            storage: 'HDD',
          },
        },
      },
    });
    const peers = unavailablePeersResponse(state);
    valid(workerDoc.check('GET', '/api/v1/workers/unavailable_peers', 200, peers));
    assert.deepEqual(peers.peers, [{ worker: { ...WORKER_ID, host: 'peer' }, timestamp: 7_000 }]);
  });
});

describe('dynamic configuration', () => {
  const text = [
    '- level: SYSTEM',
    '  config:',
    '    svc.quota.user.diskBytesWritten: 10g',
    '- level: TENANT',
    '  tenantId: analytics',
    '  config:',
    '    svc.quota.user.diskBytesWritten: 100g',
    '  users:',
    '    - name: etl',
    '      config:',
    '        svc.quota.user.diskBytesWritten: 1t',
  ].join('\n');
  const dynamic = parseDynamicConfig(text, { release: '0.6.0' }).config;

  it('lists every level, or the level, tenant and user asked for', () => {
    const all = dynamicConfigResponse(dynamic, {});
    valid(masterDoc.check('GET', '/api/v1/conf/dynamic', 200, all));
    assert.deepEqual(
      all.configs.map((level) => [level.level, level.desc, level.configs.map((c) => c.value)]),
      [
        ['SYSTEM', '', ['10g']],
        ['TENANT', 'tenantId: analytics', ['100g']],
        ['TENANT_USER', 'tenantId: analytics, name: etl', ['1t']],
      ],
    );
    assert.deepEqual(dynamicConfigResponse(dynamic, { level: 'TENANT', tenant: 'other' }).configs, []);
    assert.equal(
      dynamicConfigResponse(dynamic, { level: 'TENANT_USER', tenant: 'analytics' }).configs.length,
      0,
    );
    assert.equal(
      dynamicConfigResponse(dynamic, { level: 'TENANT_USER', tenant: 'analytics', name: 'etl' }).configs
        .length,
      1,
    );
  });
});

describe('thread dump', () => {
  it('the main thread, the libuv handles and worker threads, from a report', () => {
    const threads = threadStacksOf({
      header: { threadId: 0 },
      javascriptStack: {
        stack: ['at Object.getReport (node:internal/process/report:36:13)', 'at main (x.ts:1:1)'],
      },
      libuv: [
        {
          type: 'tcp',
          is_active: true,
          is_referenced: true,
          fd: 21,
          localEndpoint: { ip4: '127.0.0.1', port: 9098 },
          remoteEndpoint: { ip4: '127.0.0.1', port: 5000 },
        },
      ],
      workers: [{ header: { threadId: 3 }, javascriptStack: { stack: ['at work (w.ts:2:2)'] } }],
    });
    assert.deepEqual(
      threads.map((t) => [t.threadId, t.threadName, t.stackTrace]),
      [
        [0, 'main', ['at main (x.ts:1:1)']],
        [0, 'libuv', ['tcp active ref fd=21 127.0.0.1:9098 -> 127.0.0.1:5000']],
        [3, 'worker-3', ['at work (w.ts:2:2)']],
      ],
    );
    assert.equal(handleText({ type: 'timer', is_active: false }), 'timer inactive unref');
  });

  it('this process’s dump validates against the document', () => {
    const monitor = new EventLoopMonitor();
    try {
      const dump = threadDump(monitor);
      valid(workerDoc.check('GET', '/api/v1/thread_dump', 200, dump));
      assert.ok(dump.threadStacks[0]!.stackTrace.length > 0, 'dump.threadStacks[0]!.stackTrace.length > 0');
    } finally {
      monitor.close();
    }
  });
});

describe('error messages', () => {
  it('name the field as a path into the request', () => {
    assert.equal(fieldName('body', '/add/0/rpcPort'), 'body.add[0].rpcPort');
    assert.equal(fieldName('body', ''), 'body');
    assert.equal(
      schemaErrorMessage('body', {
        keyword: 'required',
        instancePath: '/add/0',
        params: { missingProperty: 'host' },
      }),
      'body.add[0].host is required',
    );
    assert.equal(
      schemaErrorMessage('body', {
        keyword: 'enum',
        instancePath: '/eventType',
        params: { allowedValues: ['A', 'B'] },
      }),
      'body.eventType: expected one of "A", "B"',
    );
  });

  it('a path is nearest to the valid path it differs least from', () => {
    const paths = ['/api/v1/workers', '/api/v1/workers/events', '/api/v1/conf', '/conf'];
    assert.equal(nearestPath('/api/v1/worker', paths), '/api/v1/workers');
    assert.equal(nearestPath('/API/V1/CONF', paths), '/api/v1/conf');
    assert.equal(nearestPath('/api/v1/workers/event', paths), '/api/v1/workers/events');
    fc.assert(
      fc.property(fc.string(), (path) => {
        const nearest = nearestPath(path, paths);
        assert.ok(
          nearest !== undefined && paths.includes(nearest),
          'nearest !== undefined && paths.includes(nearest)',
        );
      }),
    );
  });

  it('a media type is the header’s type, lower case, without parameters', () => {
    assert.equal(mediaTypeOf('Application/JSON; charset=utf-8'), 'application/json');
    assert.equal(mediaTypeOf(undefined), undefined);
    assert.equal(mediaTypeOf(' ; x=1'), undefined);
  });
});
