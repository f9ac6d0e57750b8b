import type {
  ConfResponse,
  DynamicConfigResponse,
  HandleResponse,
  MasterInfoResponse,
  ShufflePartitionsResponse,
  ThreadStackResponse,
  WorkerData,
  WorkerEventsResponse,
  WorkerIdData,
  WorkerInfoResponse,
  WorkerTimestampData,
} from './projections/types.ts';

/**
 * The plain-text bodies of the legacy endpoints, rendered from the same responses /api/v1 sends (so the two views
 * never disagree). The layout follows the reference: a banner line, then one entry per line; lists with times pad
 * the id (workers to 50, applications to 40 characters) and append the time.
 */

const BANNER_WIDTH = 71;

export function banner(title: string): string {
  const inner = ` ${title} `;
  const left = Math.max(3, Math.floor((BANNER_WIDTH - inner.length) / 2));
  const right = Math.max(3, BANNER_WIDTH - inner.length - left);
  return `${'='.repeat(left)}${inner}${'='.repeat(right)}`;
}

export function timeText(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

export function workerIdText(id: WorkerIdData): string {
  return `${id.host}:${id.rpcPort}:${id.pushPort}:${id.fetchPort}:${id.replicatePort}`;
}

function lines(title: string, entries: readonly string[]): string {
  return [banner(title), ...entries].join('\n');
}

/** A worker with what is known of it: state, slots, heartbeat, rack and disks. */
export function workerDetail(worker: WorkerData): string[] {
  const facts = [
    worker.workerState === undefined ? undefined : `state: ${worker.workerState}`,
    worker.slotUsed === undefined ? undefined : `slotsUsed: ${worker.slotUsed}`,
    worker.lastHeartbeatTimestamp === undefined
      ? undefined
      : `lastHeartbeat: ${timeText(worker.lastHeartbeatTimestamp)}`,
    worker.networkLocation === undefined ? undefined : `networkLocation: ${worker.networkLocation}`,
  ].filter((fact): fact is string => fact !== undefined);
  const disks = Object.entries(worker.diskInfos ?? {}).map(([mount, text]) => `    ${mount}: ${text}`);
  return [workerIdText(worker), ...facts.map((fact) => `  ${fact}`), ...disks];
}

export function workersText(title: string, workers: readonly WorkerData[]): string {
  return lines(title, workers.flatMap(workerDetail));
}

export function workerIdsText(title: string, workers: readonly WorkerIdData[]): string {
  return lines(title, workers.map(workerIdText));
}

export function workerTimesText(title: string, entries: readonly WorkerTimestampData[]): string {
  return lines(
    title,
    entries.map((entry) => `${workerIdText(entry.worker).padEnd(50)}${timeText(entry.timestamp)}`),
  );
}

export function applicationTimesText(
  title: string,
  apps: readonly { readonly appId: string; readonly lastHeartbeatTimestamp: number }[],
): string {
  return lines(
    title,
    apps.map((app) => `${app.appId.padEnd(40)}${timeText(app.lastHeartbeatTimestamp)}`),
  );
}

export function listText(title: string, items: readonly string[]): string {
  return lines(title, items);
}

export function booleanText(title: string, value: boolean): string {
  return lines(title, [String(value)]);
}

export function confText(title: string, conf: ConfResponse): string {
  const width = Math.max(0, ...conf.configs.map((entry) => entry.name.length));
  return lines(
    title,
    conf.configs.map((entry) => `${entry.name.padEnd(width)} = ${entry.value}`),
  );
}

export function dynamicConfText(title: string, dynamic: DynamicConfigResponse): string {
  return lines(
    title,
    dynamic.configs.flatMap((level) => [
      level.desc === '' ? level.level : `${level.level} (${level.desc})`,
      ...level.configs.map((entry) => `  ${entry.name} = ${entry.value}`),
    ]),
  );
}

export function threadDumpText(title: string, dump: ThreadStackResponse): string {
  const threads = dump.threadStacks.flatMap((thread) => [
    `"${thread.threadName}" id=${thread.threadId} ${thread.threadState}`,
    ...thread.stackTrace.map((frame) => `    ${frame}`),
    '',
  ]);
  const delay = dump.eventLoopDelay;
  const loop =
    delay === undefined
      ? []
      : [
          `event loop delay (ms): min ${delay.minMs} mean ${delay.meanMs} p50 ${delay.p50Ms} ` +
            `p99 ${delay.p99Ms} max ${delay.maxMs}`,
        ];
  return lines(title, [...threads, ...loop]);
}

export function masterGroupText(title: string, group: MasterInfoResponse): string {
  return lines(title, [
    `group: ${group.groupId}`,
    group.leader === undefined
      ? 'leader: none known'
      : `leader: ${group.leader.id} (${group.leader.address})`,
    ...group.masterCommitInfo.map(
      (member) => `member: ${member.id} ${member.address} role ${member.startUpRole}`,
    ),
  ]);
}

export function workerEventsText(title: string, events: WorkerEventsResponse): string {
  return lines(
    title,
    events.workerEvents.map(
      (entry) =>
        `${workerIdText(entry.worker).padEnd(50)}${entry.event.eventType.padEnd(24)}` +
        timeText(entry.event.eventTime),
    ),
  );
}

export function workerInfoText(title: string, info: WorkerInfoResponse): string {
  return lines(title, [
    ...workerDetail(info),
    `  isRegistered: ${info.isRegistered}`,
    `  isShutdown: ${info.isShutdown}`,
    `  isDecommissioning: ${info.isDecommissioning}`,
  ]);
}

export function partitionsText(title: string, partitions: ShufflePartitionsResponse): string {
  const side = (name: string, byShuffle: ShufflePartitionsResponse['primaryPartitions']): string[] =>
    Object.entries(byShuffle).flatMap(([shuffle, locations]) =>
      Object.values(locations).map(
        (location) =>
          `${name} ${shuffle} ${location.idEpoch} ${location.storage} ${location.hostAndPorts}` +
          (location.peer === undefined ? '' : ` peer ${location.peer}`),
      ),
    );
  return lines(title, [
    ...side('primary', partitions.primaryPartitions),
    ...side('replica', partitions.replicaPartitions),
  ]);
}

export function handleText(title: string, answer: HandleResponse): string {
  return lines(title, [`${answer.success ? 'success' : 'failure'}: ${answer.message}`]);
}
