import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workerKey } from '../../domain/index.ts';
import type { Message } from '../../protocol/messages.ts';
import { QUOTAS_OFF, UNLIMITED, type QuotaSettings } from '../../quota/index.ts';
import { Harness, onlySent, workerId } from '../worker/test-kit.ts';
import { initialMasterState, MASTER_TIMERS, masterMachine, type MasterState } from './index.ts';
import { testMasterConfig } from './testing.ts';

const W1 = workerId('w1');
let nextRequest = 1;
const DISKS = [
  {
    mountPoint: '/d1',
    type: 'HDD',
    usableBytes: 2 ** 36,
    totalBytes: 2 ** 36,
    status: 'HEALTHY',
    avgFlushTimeNs: 0,
    avgFetchTimeNs: 0,
    activeSlots: 0,
  },
] as const;

const QUOTA: QuotaSettings = {
  ...QUOTAS_OFF,
  enabled: true,
  user: { ...UNLIMITED, diskBytesWritten: 1000 },
};

function cluster(settings: QuotaSettings = QUOTA, plantedBug?: 'quota-user-ignored'): Harness<MasterState> {
  const harness = new Harness(
    masterMachine,
    initialMasterState(
      testMasterConfig({
        quota: { settings, updateIntervalMs: 30_000 },
        ...(plantedBug === undefined ? {} : { plantedBug }),
      }),
    ),
  );
  harness.start();
  send(harness, workerKey(W1), {
    type: 'RegisterWorker',
    worker: W1,
    networkLocation: '/r1',
    disks: DISKS,
  });
  for (const [appId, user] of [
    ['app-a', 'alice'],
    ['app-b', 'bob'],
  ] as const)
    send(harness, `lm-${appId}`, { type: 'RegisterApplication', appId, user, tenant: 't' });
  return harness;
}

function send(harness: Harness<MasterState>, from: string, message: Message) {
  return harness.receive(from, message, { requestId: (nextRequest += 1) });
}

function report(harness: Harness<MasterState>, aliceBytes: number): void {
  send(harness, workerKey(W1), {
    type: 'WorkerHeartbeat',
    worker: W1,
    disks: DISKS,
    activeShuffleKeys: [],
    highWorkload: false,
    state: 'Normal',
    resourceConsumption: [
      {
        appId: 'app-a',
        diskBytesWritten: aliceBytes,
        diskFileCount: 1,
        hdfsBytesWritten: 0,
        hdfsFileCount: 0,
      },
      { appId: 'app-b', diskBytesWritten: 10, diskFileCount: 1, hdfsBytesWritten: 0, hdfsFileCount: 0 },
    ],
  });
  harness.timer(MASTER_TIMERS.quota, harness.now + 30_000);
}

function requestSlots(harness: Harness<MasterState>, appId: string, shuffleId: number) {
  const effects = send(harness, `lm-${appId}`, {
    type: 'RequestSlots',
    appId,
    shuffleId,
    partitionIds: [0],
    replicate: false,
    rackAware: false,
    availableTypes: 2,
    excludedWorkers: [],
    maxWorkers: 10,
  });
  return onlySent(effects, 'RequestSlotsResponse').message;
}

describe('master: quotas', () => {
  it('refuses a new shuffle of a user over quota with QUOTA_EXCEEDED naming user, quota, usage and limit', () => {
    const harness = cluster();
    report(harness, 1500);
    const refused = requestSlots(harness, 'app-a', 1);
    assert.equal(refused.status, 'QUOTA_EXCEEDED', refused.message);
    for (const part of ['t/alice', 'diskBytesWritten', '1500', '1000', 'svc.quota.user.diskBytesWritten'])
      assert.ok(refused.message.includes(part), `the refusal names ${part}: ${refused.message}`);
    assert.equal(requestSlots(harness, 'app-b', 1).status, 'SUCCESS', 'another user is not affected');
    assert.deepEqual(
      [...harness.state.durable.applications.apps.get('app-a')!.shuffles],
      [],
      'the refused shuffle is not registered',
    );
  });

  it('lets the user in again once usage falls below the limit, at the next recomputation', () => {
    const harness = cluster();
    report(harness, 1500);
    assert.equal(requestSlots(harness, 'app-a', 1).status, 'QUOTA_EXCEEDED');
    report(harness, 100);
    assert.equal(requestSlots(harness, 'app-a', 1).status, 'SUCCESS');
  });

  it('applies limits handed in by the driver at once (a lowered quota refuses the next shuffle)', () => {
    const harness = cluster({ ...QUOTA, user: UNLIMITED });
    report(harness, 1500);
    assert.equal(requestSlots(harness, 'app-a', 1).status, 'SUCCESS');
    const effects = harness.step({
      kind: 'admin',
      command: { type: 'quotaSettings', settings: { ...QUOTA, users: new Map([['t/alice', QUOTA.user]]) } },
      commandId: 7,
    });
    assert.ok(
      effects.some((e) => e.kind === 'adminReply' && e.success),
      'the settings are acknowledged',
    );
    assert.equal(requestSlots(harness, 'app-a', 2).status, 'QUOTA_EXCEEDED', 'the lowered quota refuses');
    assert.equal(requestSlots(harness, 'app-a', 1).status, 'SUCCESS', 'a registered shuffle is not new');
  });

  it('refuses nothing with svc.quota.enabled off or svc.quota.user.enabled off', () => {
    for (const settings of [
      { ...QUOTA, enabled: false },
      { ...QUOTA, userEnabled: false },
    ]) {
      const harness = cluster(settings);
      report(harness, 1500);
      assert.equal(requestSlots(harness, 'app-a', 1).status, 'SUCCESS');
    }
  });

  it('catches the planted bug: quota-user-ignored registers a shuffle of a user over quota', () => {
    const harness = cluster(QUOTA, 'quota-user-ignored');
    report(harness, 1500);
    assert.equal(requestSlots(harness, 'app-a', 1).status, 'SUCCESS', 'the user quota is ignored: the bug');
  });

  it('checks the cluster quota after the user’s', () => {
    const harness = cluster({ ...QUOTA, user: UNLIMITED, cluster: { ...UNLIMITED, diskFileCount: 2 } });
    report(harness, 1);
    const refused = requestSlots(harness, 'app-b', 1);
    assert.equal(refused.status, 'QUOTA_EXCEEDED');
    assert.ok(refused.message.includes('svc.quota.cluster.diskFileCount'), refused.message);
  });

  it('with interruptShuffle, the heartbeat reply of the over-quota user’s application carries the refusal', () => {
    const harness = cluster({ ...QUOTA, interruptShuffle: true });
    report(harness, 1500);
    const heartbeat = (appId: string) =>
      onlySent(
        send(harness, `lm-${appId}`, { type: 'ApplicationHeartbeat', appId, bytesWritten: 0, fileCount: 0 }),
        'ApplicationHeartbeatResponse',
      ).message;
    const interrupted = heartbeat('app-a').quotaExceeded;
    assert.ok(interrupted?.includes('t/alice') === true, `app-a is interrupted: ${String(interrupted)}`);
    assert.equal(heartbeat('app-b').quotaExceeded, undefined, 'app-b is within its quota');
  });
});
