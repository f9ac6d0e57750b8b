// A follower's management API, in process (fastify inject): the leader's routes over the state stored in etcd. Its
// reads equal the leader's for what is stored, carry X-Svc-Served-By with the revision, and validate against the
// OpenAPI document; commands (and the legacy GETs that change state) and the metrics are answered 503 "not leader"
// with the leader before any handler runs; an unreadable etcd is a 503 that says so.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { durableLayout } from '../../core/ha/key-layout.ts';
import {
  ALLOW_ALL_HOSTS,
  emptyApplications,
  excludeWorkers,
  recordApplicationHeartbeat,
  registerShuffle,
  registerWorker,
} from '../../core/lifecycle/index.ts';
import { workerKey } from '../../core/domain/index.ts';
import type { MasterState } from '../../core/machines/master/index.ts';
import type { Release } from '../../core/release/version.ts';
import { masterApi } from '../http/master-api.ts';
import { buildManagementServer } from '../http/server.ts';
import { confAt, masterStateAt, StubDriver } from '../http/testing/fixtures.ts';
import { responseValidator } from '../http/testing/openapi-validator.ts';
import { followerAccess } from './not-leader-http.ts';
import { StoredStateReader, type StoredRange } from './stored-state-reader.ts';

const PREFIX = '/svc/master/state/';
const LEADER = 'm1@127.0.0.1:9097';
const doc = responseValidator('master', { closedObjects: true });
const W1 = { host: 'w1', rpcPort: 1, pushPort: 2, fetchPort: 3, replicatePort: 4 };
const W2 = { host: 'w2', rpcPort: 5, pushPort: 6, fetchPort: 7, replicatePort: 8 };

function leaderState(release: Release): MasterState {
  const base = masterStateAt(confAt('master', release));
  let workers = base.durable.workers;
  for (const id of [W1, W2])
    workers = registerWorker(
      workers,
      { id, disks: [], networkLocation: '' },
      1_000,
      ALLOW_ALL_HOSTS,
    ).registry;
  workers = excludeWorkers(workers, { add: [workerKey(W2)], remove: [] }, 1_500).registry;
  let applications = recordApplicationHeartbeat(
    emptyApplications(),
    { appId: 'app-1', bytesWritten: 0, fileCount: 0 },
    2_000,
  ).registry;
  applications = registerShuffle(applications, 'app-1', 7, 2_000).registry;
  return { ...base, durable: { ...base.durable, workers, applications } };
}

/** The leader's API and a follower's over what the leader stored, at `release`. */
async function pair(
  release: Release,
  list: () => Promise<StoredRange>,
): Promise<{ leader: FastifyInstance; follower: FastifyInstance }> {
  const conf = confAt('master', release);
  const self = { nodeId: 'master-0', rpcAddress: '127.0.0.1:9097' };
  const leader = await buildManagementServer({
    api: masterApi({ driver: new StubDriver(leaderState(release)), conf, self, now: () => 61_000 }),
  });
  const reader = new StoredStateReader({
    list,
    prefix: PREFIX,
    initial: masterStateAt(conf),
    maxAgeMs: 1_000,
    clock: () => 0,
  });
  const follower = await buildManagementServer({
    api: masterApi({
      access: followerAccess({ memberId: 'm2', leader: () => LEADER, reader, refusedReads: ['/metrics'] }),
      conf,
      self,
    }),
  });
  return { leader, follower };
}

const stored = (release: Release, revision: number) => (): Promise<StoredRange> =>
  Promise.resolve({
    values: [...durableLayout(PREFIX, leaderState(release).durable)].map(([key, value]) => ({ key, value })),
    revision,
  });

/** What a follower cannot know, left out of the leader's answer for the comparison. */
function persisted(body: unknown): unknown {
  return JSON.parse(
    JSON.stringify(body, (key, value: unknown) =>
      key === 'heartbeatElapsedSeconds' || key === 'resourceConsumptions' ? undefined : value,
    ),
  );
}

describe('a follower’s management API', () => {
  let leader: FastifyInstance;
  let follower: FastifyInstance;
  before(async () => {
    ({ leader, follower } = await pair('0.6.0', stored('0.6.0', 42)));
  });
  after(async () => {
    await leader?.close();
    await follower?.close();
  });

  for (const path of [
    '/api/v1/workers',
    '/api/v1/workers/events',
    '/api/v1/applications',
    '/api/v1/applications/hostnames',
    '/api/v1/shuffles',
  ]) {
    it(`GET ${path}: the leader's answer for what is stored, from etcd's revision`, async () => {
      const [fromLeader, fromFollower] = await Promise.all([
        leader.inject({ method: 'GET', url: path }),
        follower.inject({ method: 'GET', url: path }),
      ]);
      assert.equal(fromFollower.statusCode, 200, fromFollower.body);
      assert.equal(fromFollower.headers['x-svc-served-by'], 'follower m2; etcd revision 42');
      assert.equal(fromLeader.headers['x-svc-served-by'], undefined, 'the leader says nothing');
      const body: unknown = fromFollower.json();
      assert.equal(doc.check('GET', path, 200, body), undefined, doc.check('GET', path, 200, body));
      assert.deepEqual(body, persisted(fromLeader.json()));
    });
  }

  it('leaves out what only heartbeats tell', async () => {
    const body = (await follower.inject({ method: 'GET', url: '/api/v1/workers' })).json<{
      workers: Record<string, unknown>[];
    }>();
    assert.deepEqual(
      body.workers.map((worker) => worker.host),
      ['w1', 'w2'],
    );
    for (const worker of body.workers) {
      assert.equal(worker.heartbeatElapsedSeconds, undefined);
      assert.equal(worker.resourceConsumptions, undefined);
      assert.equal(worker.lastHeartbeatTimestamp, 1_000, 'the stored time');
    }
  });

  it('serves the legacy reads the same way', async () => {
    const [fromLeader, fromFollower] = await Promise.all([
      leader.inject({ method: 'GET', url: '/shuffle' }),
      follower.inject({ method: 'GET', url: '/shuffle' }),
    ]);
    assert.equal(fromFollower.statusCode, 200);
    assert.match(fromFollower.body, /app-1-7/);
    assert.equal(fromFollower.body, fromLeader.body);
    assert.equal(fromFollower.headers['x-svc-served-by'], 'follower m2; etcd revision 42');
    const masters = await follower.inject({ method: 'GET', url: '/api/v1/masters' });
    assert.equal(masters.statusCode, 200);
    assert.equal(masters.headers['x-svc-served-by'], 'follower m2', 'its own answers say who served them');
  });

  for (const [method, url, payload] of [
    ['POST', '/api/v1/workers/exclude', { add: [W1] }],
    ['POST', '/api/v1/workers/events', 'not even JSON'],
    ['POST', '/exclude', undefined],
    ['GET', '/metrics', undefined],
  ] as const) {
    it(`${method} ${url}: 503 "not leader" with the leader, before the request is read`, async () => {
      const answer = await follower.inject({
        method,
        url,
        ...(payload === undefined ? {} : { payload: payload as never }),
        ...(typeof payload === 'string' ? { headers: { 'content-type': 'application/json' } } : {}),
      });
      assert.equal(answer.statusCode, 503, answer.body);
      assert.equal(answer.headers['retry-after'], '1');
      const body = answer.json<{ error: string; message: string; leader: string }>();
      assert.equal(body.error, 'not leader');
      assert.equal(body.leader, LEADER);
      assert.match(body.message, /master m2 does not lead its group .*the leader is m1@127\.0\.0\.1:9097/);
      if (url.startsWith('/api/v1'))
        assert.equal(doc.check(method, url, 503, body), undefined, doc.check(method, url, 503, body));
    });
  }

  it('keeps a path that does not exist a 404', async () => {
    assert.equal((await follower.inject({ method: 'POST', url: '/api/v1/nothing' })).statusCode, 404);
  });
});

describe('a follower whose etcd cannot be read', () => {
  it('answers its state reads 503 saying why, and still serves the rest', async () => {
    const { leader, follower } = await pair('0.6.0', () =>
      Promise.reject(new Error('etcd Range: UNAVAILABLE: No connection established')),
    );
    try {
      for (const url of ['/api/v1/shuffles', '/workerInfo']) {
        const answer = await follower.inject({ method: 'GET', url });
        assert.equal(answer.statusCode, 503, answer.body);
        assert.equal(answer.headers['retry-after'], '1');
        const body = answer.json<{ message: string }>();
        assert.match(body.message, /cannot read the group's state from etcd: etcd Range: UNAVAILABLE/);
        assert.match(body.message, /ask the leader \(m1@127\.0\.0\.1:9097\)/);
        if (url.startsWith('/api/v1'))
          assert.equal(doc.check('GET', url, 503, body), undefined, doc.check('GET', url, 503, body));
      }
      assert.equal((await follower.inject({ method: 'GET', url: '/api/v1/conf' })).statusCode, 200);
    } finally {
      await leader.close();
      await follower.close();
    }
  });
});

describe('a follower at a release whose legacy commands are GETs', () => {
  it('refuses them as commands', async () => {
    const { leader, follower } = await pair('0.4.0', stored('0.4.0', 9));
    try {
      const answer = await follower.inject({ method: 'GET', url: '/exclude?add=w1:1:2:3:4' });
      assert.equal(answer.statusCode, 503, answer.body);
      assert.equal(answer.json<{ error: string }>().error, 'not leader');
      const read = await follower.inject({ method: 'GET', url: '/workerInfo' });
      assert.equal(read.statusCode, 200);
      assert.equal(read.headers['x-svc-served-by'], 'follower m2; etcd revision 9');
    } finally {
      await leader.close();
      await follower.close();
    }
  });
});
