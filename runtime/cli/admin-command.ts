// `svc admin`: operate a running cluster through its management interface (/api/v1), with the typed client that
// clients/openapi generates from the project's OpenAPI documents. Every decision is the server's: a command sends
// what the operator asked and prints the answer (a table, or the raw JSON with --json); an error prints the
// server's {message} and exits 1, and so does a node that cannot be reached.
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import {
  errorMessage,
  masterClient,
  workerClient,
  type Auth,
  type ClientOptions,
  type MasterClient,
  type MasterSchemas,
  type WorkerClient,
  type WorkerSchemas,
} from '../../clients/openapi/index.ts';
import { formatProblem, resolveConfig } from '../../conf/index.ts';
import { parseWorkerKey } from '../../core/domain/worker.ts';
import { currentMaster, followMaster, masterCursor } from '../../core/ha/follow-leader.ts';
import { localPlatform } from '../platform.ts';

type WorkerId = MasterSchemas['WorkerId'];
type WorkerData = MasterSchemas['WorkerData'];
type EventType = MasterSchemas['SendWorkerEventRequest']['eventType'];
type ExitType = NonNullable<WorkerSchemas['WorkerExitRequest']['type']>;

/** The event types of the master's document, in its order. */
const EVENT_TYPES = [
  'IMMEDIATELY',
  'DECOMMISSION',
  'DECOMMISSIONTHENIDLE',
  'GRACEFUL',
  'RECOMMISSION',
  'NONE',
] as const satisfies readonly EventType[];
/** The exit types of the worker's document. */
const EXIT_TYPES = ['DECOMMISSION', 'GRACEFUL', 'IMMEDIATELY', 'NONE'] as const satisfies readonly ExitType[];
// Compile-time: a type the documents add and these lists lack fails the typecheck (after regenerating the client).
const _everyEventType: [Exclude<EventType, (typeof EVENT_TYPES)[number]>] extends [never] ? true : never =
  true;
const _everyExitType: [Exclude<ExitType, (typeof EXIT_TYPES)[number]>] extends [never] ? true : never = true;

const DEFAULT_TIMEOUT_SECONDS = 30;

/** A failure to print as `svc admin <command>: <message>`, exiting 1. */
class AdminFailure extends Error {}

interface AccessFlags {
  readonly json?: boolean;
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  readonly timeout: number;
}

interface MasterFlags extends AccessFlags {
  readonly master?: string;
  readonly confFile?: string;
}

interface NodeFlags extends MasterFlags {
  /** Ask this worker instead of the master. */
  readonly worker?: string;
}

/** The node a request goes to, for messages. */
interface Target {
  readonly role: 'master' | 'worker';
  readonly url: string;
}

// ------------------------------------------------------------------------------------------------ arguments

function httpUrl(value: string): string {
  const text = value.includes('://') ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError(`'${value}' is not an address; expected http://host:port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError(`'${value}': expected an http:// or https:// address`);
  return text;
}

/** One management address, or several separated by commas (the members of a master group). */
function httpUrls(value: string): string {
  return value
    .split(',')
    .map((url) => httpUrl(url.trim()))
    .join(',');
}

function seconds(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError('expected a number of seconds above 0');
  return n;
}

/** Worker ids as the API takes them: `host:rpcPort:pushPort:fetchPort:replicatePort`, comma-separated or repeated. */
function workerIds(value: string, previous: readonly WorkerId[] = []): WorkerId[] {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0)
    throw new InvalidArgumentError('expected host:rpcPort:pushPort:fetchPort:replicatePort');
  try {
    return [...previous, ...items.map((item) => parseWorkerKey(item))];
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function choice<T extends string>(names: readonly T[], what: string): (value: string) => T {
  return (value) => {
    const found = names.find((name) => name === value.trim().toUpperCase());
    if (found === undefined)
      throw new InvalidArgumentError(`'${value}' is not ${what}; expected one of ${names.join(', ')}`);
    return found;
  };
}

function idText(worker: WorkerId): string {
  return `${worker.host}:${worker.rpcPort}:${worker.pushPort}:${worker.fetchPort}:${worker.replicatePort}`;
}

// ---------------------------------------------------------------------------------------------- the client

/** Basic credentials from --user/--password, else a bearer token from --token or SVC_ADMIN_TOKEN. */
function auth(flags: AccessFlags): Auth | undefined {
  const password = flags.password ?? process.env.SVC_ADMIN_PASSWORD;
  if (flags.user !== undefined) {
    if (password === undefined) throw new AdminFailure('--user needs --password (or SVC_ADMIN_PASSWORD)');
    if (flags.token !== undefined) throw new AdminFailure('--user/--password and --token: give one of them');
    return { user: flags.user, password };
  }
  if (flags.password !== undefined) throw new AdminFailure('--password needs --user');
  const token = flags.token ?? process.env.SVC_ADMIN_TOKEN;
  return token === undefined || token === '' ? undefined : { token };
}

function clientOptions(flags: AccessFlags): ClientOptions {
  const credentials = auth(flags);
  return {
    timeoutMs: Math.round(flags.timeout * 1000),
    ...(credentials === undefined ? {} : { auth: credentials }),
  };
}

/** The master's management address: --master, else `http://<svc.master.http.host>:<svc.master.http.port>`. */
function masterAddress(flags: MasterFlags): string {
  return flags.master ?? configuredAddress('master', flags.confFile);
}

/** `http://<svc.<role>.http.host>:<svc.<role>.http.port>` as the configuration file and the environment say. */
function configuredAddress(role: 'master' | 'worker', confFile: string | undefined): string {
  let fileText: string | undefined;
  if (confFile !== undefined) {
    if (!existsSync(confFile)) throw new AdminFailure(`--conf-file ${confFile}: no such file`);
    fileText = readFileSync(confFile, 'utf8');
  }
  const conf = resolveConfig({
    role,
    ...(fileText === undefined ? {} : { fileText, fileName: confFile }),
    env: process.env,
    platform: localPlatform(),
  });
  try {
    const host = conf.getString(`svc.${role}.http.host`);
    const port = conf.getInt(`svc.${role}.http.port`);
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  } catch (error) {
    const problems = conf.errors.map((problem) => `\n  ${formatProblem(problem)}`).join('');
    throw new AdminFailure(
      `cannot tell the ${role}'s address from the configuration (${(error as Error).message}); ` +
        `pass --${role} http://host:port${problems}`,
    );
  }
}

/** A request of the master's API, sent with the client of the member asked. */
type MasterRequest<T> = (client: MasterClient) => Promise<{ data?: T; error?: unknown; response: Response }>;

/**
 * Whom a request needs: `any` member (a read: followers of a group serve them from the state in etcd) or the
 * `leader` (a command, which followers refuse; `ready`, which waits for a master that leads).
 */
type Needs = 'any' | 'leader';

/** Whether an answer came from a follower of a group (the header every follower's answer carries). */
function fromFollower(response: Response): boolean {
  return response.headers.get('x-svc-served-by')?.startsWith('follower') === true;
}

/**
 * Sends `request` to the master given, or, given every member of a group (`--master http://h1:p1,http://h2:p2`), to
 * the members in the core's cursor order (core/ha/follow-leader.ts) until one answers: a member that answers 503
 * (a follower refusing a command, or unable to read etcd; a stopping master) or does not answer sends the request on
 * to the next; so does a follower's answer when the request needs the leader. A command is sent to a member only to
 * be refused before anything is done when that member follows, so sending it on cannot do it twice; one that got no
 * answer in time is not sent again (it may have been done).
 */
async function askMasterAt<T>(
  flags: MasterFlags,
  needs: Needs,
  request: MasterRequest<T>,
): Promise<{ readonly data: T; readonly target: Target }> {
  const urls = masterAddress(flags)
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '')
    .map((url) => (url.includes('://') ? url : `http://${url}`));
  const at = (url: string) => ({
    target: { role: 'master' as const, url },
    client: masterClient(url, clientOptions(flags)),
  });
  if (urls.length <= 1) {
    const { target, client } = at(urls[0] ?? masterAddress(flags));
    return { data: await answer(target, request(client)), target };
  }
  let cursor = masterCursor(urls);
  const heard: string[] = [];
  for (let tried = 0; tried < cursor.members.length; tried++) {
    const url = currentMaster(cursor);
    const { target, client } = at(url);
    let result: Awaited<ReturnType<MasterRequest<T>>>;
    try {
      result = await request(client);
    } catch (error) {
      if (needs === 'leader' && error instanceof Error && error.name === 'TimeoutError')
        return { data: await answer(target, Promise.reject(error)), target };
      heard.push(`${url}: ${networkReason(error)}`);
      cursor = followMaster(cursor, { kind: 'unreachable', member: url });
      continue;
    }
    const { response } = result;
    const refusal = result.error as { error?: string; message?: string } | undefined;
    if (response.status === 503 || (needs === 'leader' && fromFollower(response))) {
      heard.push(`${url}: ${refusal?.message ?? (response.status === 503 ? 'HTTP 503' : 'a follower')}`);
      cursor = followMaster(
        cursor,
        refusal?.error === 'not leader' || fromFollower(response)
          ? { kind: 'notLeader', from: url, leader: null }
          : { kind: 'unreachable', member: url },
      );
      continue;
    }
    return { data: await answer(target, Promise.resolve(result)), target };
  }
  throw new AdminFailure(
    `${needs === 'leader' ? 'no master of the group leads now' : 'no master of the group answers'}; ${heard.join('; ')}`,
  );
}

/** The answer of askMasterAt, without who gave it. */
async function askMaster<T>(flags: MasterFlags, needs: Needs, request: MasterRequest<T>): Promise<T> {
  return (await askMasterAt(flags, needs, request)).data;
}

function worker(url: string, flags: AccessFlags): { target: Target; client: WorkerClient } {
  return { target: { role: 'worker', url }, client: workerClient(url, clientOptions(flags)) };
}

/** Why a request got no answer, as a person reads it (the cause of fetch's "fetch failed"). */
function networkReason(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer in time (--timeout)';
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code !== undefined && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The 2xx body of a request, or an AdminFailure with the server's message (or why nothing answered). */
async function answer<T>(
  target: Target,
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await pending;
  } catch (error) {
    const where = target.role === 'master' ? '--master, or svc.master.http.host/port' : '--worker';
    throw new AdminFailure(
      `cannot reach the ${target.role} at ${target.url} (${networkReason(error)}); is it running, and is that ` +
        `its management (HTTP) address? (${where})`,
    );
  }
  const { data, error, response } = result;
  if (!response.ok || error !== undefined) {
    throw new AdminFailure(
      `${errorMessage(error, response)} (HTTP ${response.status} from the ${target.role} at ${target.url})`,
    );
  }
  if (data === undefined)
    throw new AdminFailure(`the ${target.role} at ${target.url} answered ${response.status} without a body`);
  return data;
}

// ------------------------------------------------------------------------------------------------- output

function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** Columns padded to their widest cell; the last one is not padded. */
function table(header: readonly string[], rows: readonly (readonly string[])[], indent = ''): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    indent +
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ');
  return [line(header), ...rows.map(line)];
}

function time(ms: number | undefined): string {
  return ms === undefined || ms <= 0 ? '-' : new Date(ms).toISOString();
}

function workerRows(workers: readonly WorkerData[]): string[][] {
  return workers.map((w) => [
    idText(w),
    w.workerState ?? '-',
    w.slotUsed === undefined ? '-' : String(w.slotUsed),
    w.heartbeatElapsedSeconds === undefined ? '-' : `${w.heartbeatElapsedSeconds}s ago`,
    String(Object.keys(w.diskInfos ?? {}).length),
  ]);
}

function workersText(response: MasterSchemas['WorkersResponse']): string[] {
  const lines = [`workers (${response.workers.length})`];
  if (response.workers.length === 0) lines.push('  none registered');
  else
    lines.push(
      ...table(['WORKER', 'STATE', 'SLOTS', 'HEARTBEAT', 'DISKS'], workerRows(response.workers), '  '),
    );
  const manual = new Set((response.manualExcludedWorkers ?? []).map(idText));
  const list = (title: string, rows: string[][]) => {
    lines.push(`${title} (${rows.length})${rows.length === 0 ? ': none' : ''}`);
    for (const row of rows) lines.push(`  ${row.join('  ')}`.trimEnd());
  };
  list(
    'lost',
    (response.lostWorkers ?? []).map((lost) => [idText(lost.worker), `since ${time(lost.timestamp)}`]),
  );
  list(
    'excluded',
    (response.excludedWorkers ?? []).map((w) => [idText(w), manual.has(idText(w)) ? 'by an operator' : '']),
  );
  list(
    'shutdown',
    (response.shutdownWorkers ?? []).map((w) => [idText(w), w.workerState ?? '']),
  );
  list(
    'decommissioning',
    (response.decommissioningWorkers ?? []).map((w) => [idText(w), w.workerState ?? '']),
  );
  return lines;
}

/** Prints a command's {success, message}; a refusal (success false) goes to stderr and exits 1. */
function handled(name: string, response: MasterSchemas['HandleResponse'], json: boolean | undefined): number {
  if (json === true) printJson(response);
  else if (response.success) console.log(response.message ?? 'done');
  if (!response.success && json !== true)
    console.error(`svc admin ${name}: ${response.message ?? 'refused'}`);
  return response.success ? 0 : 1;
}

// ----------------------------------------------------------------------------------------------- commands

/** Runs an action; an AdminFailure becomes its message on stderr and exit code 1. */
function guarded<Args extends unknown[]>(
  name: string,
  action: (...args: Args) => Promise<number>,
): (...args: Args) => Promise<void> {
  return async (...args: Args) => {
    try {
      process.exitCode = await action(...args);
    } catch (error) {
      if (!(error instanceof AdminFailure)) throw error;
      console.error(`svc admin ${name}: ${error.message}`);
      process.exitCode = 1;
    }
  };
}

function withAccess(command: Command): Command {
  return command
    .option('--json', 'print the raw JSON answer')
    .option('--user <user>', 'basic authentication: user (with --password)')
    .option('--password <password>', 'basic authentication: password (or SVC_ADMIN_PASSWORD)')
    .option('--token <token>', 'bearer token (or SVC_ADMIN_TOKEN)')
    .addOption(
      new Option('--timeout <seconds>', 'give up on an answer after this long')
        .argParser(seconds)
        .default(DEFAULT_TIMEOUT_SECONDS),
    );
}

function withMaster(command: Command): Command {
  return withAccess(command)
    .addOption(
      new Option(
        '--master <url>',
        "the master's management address, or every member's of a group, comma-separated: a read goes to the " +
          'first member that answers it, a command to the leader ' +
          '(default: http://<svc.master.http.host>:<svc.master.http.port>)',
      ).argParser(httpUrls),
    )
    .option('--conf-file <path>', 'properties file the default --master is read from (with the environment)');
}

function withWorkerChoice(command: Command): Command {
  return withMaster(command).addOption(
    new Option('--worker <url>', "ask this worker's management address instead of the master")
      .argParser(httpUrl)
      .conflicts('master'),
  );
}

function workersCommand(): Command {
  return withMaster(new Command('workers'))
    .description('list the registered workers and the lost, excluded, shutdown and decommissioning ones')
    .action(
      guarded('workers', async (flags: MasterFlags) => {
        const response = await askMaster(flags, 'any', (client) => client.GET('/api/v1/workers'));
        if (flags.json === true) printJson(response);
        else for (const line of workersText(response)) console.log(line);
        return 0;
      }),
    );
}

function eventsCommand(): Command {
  return withMaster(new Command('events'))
    .description('list the worker events the master has sent and their workers have not completed yet')
    .action(
      guarded('events', async (flags: MasterFlags) => {
        const response = await askMaster(flags, 'any', (client) => client.GET('/api/v1/workers/events'));
        const events = response.workerEvents ?? [];
        if (flags.json === true) printJson(response);
        else if (events.length === 0) console.log('no pending worker events');
        else
          for (const line of table(
            ['WORKER', 'EVENT', 'SINCE'],
            events.map((e) => [idText(e.worker), e.event.eventType, time(e.event.eventTime)]),
          ))
            console.log(line);
        return 0;
      }),
    );
}

function excludeCommand(): Command {
  const ids = 'host:rpcPort:pushPort:fetchPort:replicatePort, comma-separated or repeated';
  return withMaster(new Command('exclude'))
    .description('add workers to the excluded workers by hand, or remove them')
    .addOption(new Option('--add <workers>', `workers to exclude (${ids})`).argParser(workerIds))
    .addOption(new Option('--remove <workers>', `workers to take back (${ids})`).argParser(workerIds))
    .action(
      guarded('exclude', async (flags: MasterFlags & { add?: WorkerId[]; remove?: WorkerId[] }) => {
        if (flags.add === undefined && flags.remove === undefined)
          throw new AdminFailure('give --add or --remove (or both) with worker ids');
        const body = { add: flags.add ?? [], remove: flags.remove ?? [] };
        return handled(
          'exclude',
          await askMaster(flags, 'leader', (client) => client.POST('/api/v1/workers/exclude', { body })),
          flags.json,
        );
      }),
    );
}

function eventCommand(): Command {
  return withMaster(new Command('event'))
    .description('send a worker event through the master (it reaches each worker with its next heartbeat)')
    .argument(
      `<type>`,
      `the event: ${EVENT_TYPES.join(', ')} (any case)`,
      choice(EVENT_TYPES, 'an event type'),
    )
    .argument(
      '<workers...>',
      'worker ids: host:rpcPort:pushPort:fetchPort:replicatePort',
      (value, previous) => workerIds(value, previous as WorkerId[] | undefined),
    )
    .action(
      guarded('event', async (eventType: EventType, workers: WorkerId[], flags: MasterFlags) => {
        const body = { eventType, workers };
        return handled(
          'event',
          await askMaster(flags, 'leader', (client) => client.POST('/api/v1/workers/events', { body })),
          flags.json,
        );
      }),
    );
}

function exitCommand(): Command {
  return withAccess(new Command('exit'))
    .description("ask a worker to exit (NONE: the worker's configured default, GRACEFUL or IMMEDIATELY)")
    .argument(
      '[type]',
      `how: ${EXIT_TYPES.join(', ')} (any case)`,
      choice(EXIT_TYPES, 'an exit type'),
      'NONE',
    )
    .addOption(
      new Option('--worker <url>', "the worker's management address (http://host:port)")
        .argParser(httpUrl)
        .makeOptionMandatory(),
    )
    .action(
      guarded('exit', async (type: ExitType, flags: AccessFlags & { worker: string }) => {
        const { target, client } = worker(flags.worker, flags);
        return handled(
          'exit',
          await answer(target, client.POST('/api/v1/workers/exit', { body: { type } })),
          flags.json,
        );
      }),
    );
}

function confCommand(): Command {
  return withWorkerChoice(new Command('conf'))
    .description("print the node's configuration (every key with a value, secrets masked)")
    .action(
      guarded('conf', async (flags: NodeFlags) => {
        let response: MasterSchemas['ConfResponse'];
        if (flags.worker === undefined) {
          response = await askMaster(flags, 'any', (client) => client.GET('/api/v1/conf'));
        } else {
          const { target, client } = worker(flags.worker, flags);
          response = await answer(target, client.GET('/api/v1/conf'));
        }
        if (flags.json === true) printJson(response);
        else {
          const configs = response.configs ?? [];
          const width = Math.max(0, ...configs.map((config) => config.name.length));
          for (const config of configs) console.log(`${config.name.padEnd(width)} = ${config.value}`);
        }
        return 0;
      }),
    );
}

function shufflesCommand(): Command {
  return withWorkerChoice(new Command('shuffles'))
    .description(
      'list the shuffles the master has registered (with --worker: the ones that worker holds files of)',
    )
    .action(
      guarded('shuffles', async (flags: NodeFlags) => {
        let response: MasterSchemas['ShufflesResponse'];
        if (flags.worker === undefined) {
          response = await askMaster(flags, 'any', (client) => client.GET('/api/v1/shuffles'));
        } else {
          const { target, client } = worker(flags.worker, flags);
          response = await answer(target, client.GET('/api/v1/shuffles'));
        }
        const shuffles = response.shuffleIds ?? [];
        if (flags.json === true) printJson(response);
        else if (shuffles.length === 0) console.log('no shuffles');
        else for (const id of shuffles) console.log(id);
        return 0;
      }),
    );
}

function applicationsCommand(): Command {
  return withWorkerChoice(new Command('applications'))
    .description(
      'list the running applications with their last heartbeat (with --worker: the ones it holds shuffles of)',
    )
    .action(
      guarded('applications', async (flags: NodeFlags) => {
        if (flags.worker !== undefined) {
          const { target, client } = worker(flags.worker, flags);
          const response = await answer(target, client.GET('/api/v1/applications'));
          if (flags.json === true) printJson(response);
          else if (response.applications.length === 0) console.log('no applications');
          else for (const id of response.applications) console.log(id);
          return 0;
        }
        const response = await askMaster(flags, 'any', (client) => client.GET('/api/v1/applications'));
        if (flags.json === true) printJson(response);
        else if (response.applications.length === 0) console.log('no applications');
        else
          for (const line of table(
            ['APPLICATION', 'LAST HEARTBEAT'],
            response.applications.map((app) => [app.appId, time(app.lastHeartbeatTimestamp)]),
          ))
            console.log(line);
        return 0;
      }),
    );
}

/** How often `ready` asks again while the node is not ready. */
const READY_RETRY_MS = 500;

/**
 * Waits until the node serves: a master answers its workers list, a worker says it is registered with its master.
 * For service managers (systemd's ExecStartPost, a container's readiness), which need an exit status, not a log line.
 */
function readyCommand(): Command {
  return withMaster(new Command('ready'))
    .description('wait until the master serves, or the worker is registered with its master')
    .addArgument(
      new Argument('[role]', 'the node to wait for').choices(['master', 'worker']).default('master'),
    )
    .addOption(
      new Option(
        '--worker <url>',
        "the worker's management address (default: http://<svc.worker.http.host>:<svc.worker.http.port>)",
      ).argParser(httpUrl),
    )
    .addOption(
      new Option('--wait <seconds>', 'give up after this long (exit 1, saying why)')
        .argParser(seconds)
        .default(60),
    )
    .action(
      guarded('ready', async (role: 'master' | 'worker', flags: NodeFlags & { wait: number }) => {
        const deadline = Date.now() + flags.wait * 1000;
        for (;;) {
          let reason: string;
          try {
            if (role === 'master') {
              // Ready: a master that leads serves (in a group, followers serve reads before anyone leads).
              const { target } = await askMasterAt(flags, 'leader', (client) =>
                client.GET('/api/v1/workers'),
              );
              console.log(`the master at ${target.url} is ready`);
              return 0;
            }
            const { target, client } = worker(
              flags.worker ?? configuredAddress('worker', flags.confFile),
              flags,
            );
            const info = await answer(target, client.GET('/api/v1/workers'));
            if (info.isRegistered === true) {
              console.log(`the worker at ${target.url} is registered with its master`);
              return 0;
            }
            reason = `the worker at ${target.url} is not registered with its master yet`;
          } catch (error) {
            if (!(error instanceof AdminFailure)) throw error;
            reason = error.message;
          }
          if (Date.now() + READY_RETRY_MS > deadline)
            throw new AdminFailure(`not ready after ${flags.wait} s: ${reason}`);
          await delay(READY_RETRY_MS);
        }
      }),
    );
}

export function adminCommand(): Command {
  return new Command('admin')
    .description(
      "operate a running cluster through its management interface (the master's and workers' /api/v1)",
    )
    .addCommand(workersCommand())
    .addCommand(excludeCommand())
    .addCommand(eventCommand())
    .addCommand(eventsCommand())
    .addCommand(exitCommand())
    .addCommand(confCommand())
    .addCommand(shufflesCommand())
    .addCommand(applicationsCommand())
    .addCommand(readyCommand())
    .addHelpText(
      'after',
      '\nThe master is at --master http://host:port, by default http://<svc.master.http.host>:<svc.master.http.port>\n' +
        'as the configuration says (--conf-file and the environment). Credentials, for a node that asks for them:\n' +
        '--user and --password (or SVC_ADMIN_PASSWORD), or --token (or SVC_ADMIN_TOKEN). An error prints the\n' +
        "server's message and exits 1, as does a node that cannot be reached.\n\n" +
        'Examples:\n' +
        '  svc admin workers --master http://127.0.0.1:9098\n' +
        '  svc admin exclude --add 10.0.0.5:9097:9091:9092:9093 --remove 10.0.0.6:9097:9091:9092:9093\n' +
        '  svc admin event decommission 10.0.0.5:9097:9091:9092:9093\n' +
        '  svc admin exit graceful --worker http://10.0.0.5:9096\n' +
        '  svc admin shuffles --json\n' +
        '  svc admin ready worker --conf-file /etc/svc/svc-defaults.conf   (readiness: docs/deployment.md)',
    );
}
