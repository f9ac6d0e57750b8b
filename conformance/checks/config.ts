// Section 9.2: the deployment shows current key names and each release's defaults; servers the suite starts with a
// deprecated key start and name the replacement, and with a removed key refuse to start saying it was removed.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  DEFAULT_CHANGES,
  DEPRECATED_SERVER_KEYS,
  REMOVED_KEY_MESSAGE,
  REMOVED_SERVER_KEYS,
  sameValue,
  type DefaultChange,
  type DeprecatedKey,
} from '../expectations/config.ts';
import type { Role } from '../expectations/endpoints.ts';
import { masterUrlSchemeAt } from '../expectations/other.ts';
import { atLeast } from '../expectations/releases.ts';
import { confOf, type ConfView } from '../conf-view.ts';
import { excerpt } from '../http.ts';
import type { RuleRow, Target } from '../report/row.ts';
import { fail, guarded, notApplicable, pass, verdict, type RuleSpec } from '../rows.ts';
import {
  congestionProbe,
  DISK_BUFFER_CHECK_INTERVAL,
  DISK_BUFFER_CONGESTION_BATCH,
  quotaProbe,
  refusalNames,
} from './key-effects.ts';
import { masterSettings, scratchDir, startServer, workerSettings, type Started } from '../servers.ts';

/** The message of a JSON log line, or the line itself. */
function messageOf(line: string): string {
  try {
    const parsed = JSON.parse(line) as { msg?: unknown };
    return typeof parsed.msg === 'string' ? parsed.msg : line;
  } catch {
    return line;
  }
}

function defaultRow(target: Target, change: DefaultChange, view: ConfView | undefined): RuleRow {
  const applies = atLeast(target.release, change.release);
  const expected = applies ? change.after : change.before === undefined ? [] : [change.before];
  const spec: RuleSpec = {
    ruleId: `9.2/default-${change.key}`,
    section: '9.2',
    title: `${change.key} defaults to ${applies ? change.after.filter((v) => v !== '').join(' or ') || 'unset' : (change.before ?? 'nothing (not yet introduced)')} at this release (changed in ${change.release})`,
  };
  if (change.role === 'client')
    return notApplicable(
      target.release,
      spec,
      'a client key: servers do not show it; its default is the client library’s',
    );
  if (view === undefined) return notApplicable(target.release, spec, `no ${change.role} URL was given`);
  const shown = view.values.get(change.key);
  const evidence = `${view.evidence}: ${change.key} ${shown === undefined ? 'not listed' : `= ${shown}`}`;
  if (change.alsoAttributedTo !== undefined && target.release === change.alsoAttributedTo) {
    const either = [change.before ?? '', ...change.after].some(
      (v) => shown !== undefined && sameValue(shown, v),
    );
    return verdict(
      target.release,
      spec,
      either,
      `${evidence} (the contract dates the change ${change.release} and notes the guide says ${change.alsoAttributedTo}: either value holds here)`,
    );
  }
  if (expected.length === 0) return verdict(target.release, spec, shown === undefined, evidence);
  const ok =
    shown === undefined ? expected.includes('') : expected.some((v) => v !== '' && sameValue(shown, v));
  return verdict(target.release, spec, ok, evidence);
}

async function shownDefaults(target: Target): Promise<RuleRow[]> {
  const views = new Map<Role, ConfView>();
  const rows: RuleRow[] = [];
  const named: RuleSpec = {
    ruleId: '9.2/conf-shows-current-names',
    section: '9.2',
    title: 'the configuration a node shows uses the key names in effect at this release, none it renamed',
  };
  rows.push(
    ...(await guarded(target.release, named, async () => {
      views.set('master', await confOf(target, target.masterUrl));
      if (target.workerUrls[0] !== undefined) views.set('worker', await confOf(target, target.workerUrls[0]));
      const stale: string[] = [];
      for (const [role, view] of views)
        for (const key of DEPRECATED_SERVER_KEYS)
          if (atLeast(target.release, key.release) && view.values.has(key.before))
            stale.push(`${role} lists ${key.before} (renamed ${key.after} in ${key.release})`);
      const evidence = [...views.values()].map((v) => `${v.evidence}: ${v.values.size} keys`).join('; ');
      return stale.length === 0
        ? pass(target.release, named, evidence)
        : fail(target.release, named, `${evidence}; ${stale.join('; ')}`);
    })),
  );
  for (const change of DEFAULT_CHANGES)
    rows.push(defaultRow(target, change, change.role === 'client' ? undefined : views.get(change.role)));
  return rows;
}

function deprecatedSpec(key: DeprecatedKey): RuleSpec {
  return {
    ruleId: `9.2/deprecated-${key.before}`,
    section: '9.2',
    title:
      key.behaviour === undefined
        ? `a ${key.role} started with ${key.before} (deprecated in ${key.release}) starts, names ${key.after}, and shows the value under ${key.after}`
        : `a ${key.role} started with ${key.before} (deprecated in ${key.release}) starts, names ${key.after}, and acts on it as on ${key.after} (${key.behaviour.kind === 'quota' ? 'a user over it is refused a new shuffle, the refusal naming the new key' : 'past it, pushes are answered congested and the client slows down'})`,
  };
}

async function deprecatedRows(target: Target, command: readonly string[], dir: string): Promise<RuleRow[]> {
  const rows: RuleRow[] = [];
  const release = target.release;
  const due = DEPRECATED_SERVER_KEYS.filter((key) => atLeast(release, key.release));
  for (const key of DEPRECATED_SERVER_KEYS.filter((k) => !atLeast(release, k.release)))
    rows.push(
      notApplicable(
        release,
        deprecatedSpec(key),
        `${key.before} is the current name at ${release} (renamed in ${key.release})`,
      ),
    );
  if (due.length === 0) return rows;
  const servers: Started[] = [];
  const behavioural: PendingBehaviour[] = [];
  try {
    const roles: Role[] = ['master', 'worker'];
    let masterRpc = '';
    for (const role of roles) {
      const keys = due.filter((k) => k.role === role);
      const settings = [
        ...(role === 'master'
          ? masterSettings(`${dir}/deprecated`)
          : workerSettings(`${dir}/deprecated-worker`)),
        ...keys.map((k) => `${k.before}=${k.value}`),
      ];
      const args = [...(role === 'worker' ? [masterRpc] : []), '--release', release];
      const started = await startServer(command, role, args, settings);
      if (started.kind === 'exited') {
        for (const key of keys)
          rows.push(
            fail(
              release,
              deprecatedSpec(key),
              `the ${role} refused to start (exit ${started.code}): ${excerpt(started.output, 300)}`,
            ),
          );
        if (role === 'master') break;
        continue;
      }
      servers.push(started);
      if (role === 'master') {
        const rpc = started.line.rpc as { port?: number } | undefined;
        masterRpc = `${masterUrlSchemeAt(release)}://127.0.0.1:${rpc?.port ?? 0}`;
      }
      if (keys.length === 0) continue;
      const view = await confOf(target, started.httpUrl, release);
      const output = started.server.output;
      for (const key of keys) {
        const line = output.find((text) => text.includes(key.before) && text.includes(key.after));
        const named = line === undefined ? undefined : messageOf(line);
        const shown = view.values.get(key.after);
        const evidence = `${role} listening; log ${named === undefined ? `never names ${key.after}` : `"${excerpt(named, 200)}"`}; ${view.evidence}: ${key.after} ${shown === undefined ? 'not listed' : `= ${shown}`}${view.values.has(key.before) ? `, ${key.before} listed` : ''}`;
        if (key.behaviour !== undefined) {
          // Judged by what the old name does (below, once these servers are stopped), not by what /conf shows.
          const log = `log ${named === undefined ? `never names ${key.after}` : `"${excerpt(named, 200)}"`}`;
          behavioural.push({ key, behaviour: key.behaviour, named: named !== undefined, log });
          continue;
        }
        const ok =
          named !== undefined &&
          shown !== undefined &&
          sameValue(shown, key.value) &&
          !view.values.has(key.before);
        rows.push(verdict(release, deprecatedSpec(key), ok, evidence));
      }
    }
  } finally {
    await Promise.all(servers.reverse().map((s) => s.server.stop()));
  }
  for (const pending of behavioural)
    rows.push(...(await behaviourRow(release, command, `${dir}/behaviour-${pending.key.before}`, pending)));
  return rows;
}

interface PendingBehaviour {
  readonly key: DeprecatedKey;
  readonly behaviour: NonNullable<DeprecatedKey['behaviour']>;
  /** Whether the server's log named the replacement when started with the old name. */
  readonly named: boolean;
  readonly log: string;
}

/**
 * A deprecated name judged by its effect: servers of the suite's own started with the old name set (a quota of one
 * unit, a congestion watermark of one byte) refuse a user over quota naming the new key, or answer pushes congested.
 */
async function behaviourRow(
  release: string,
  command: readonly string[],
  dir: string,
  pending: PendingBehaviour,
): Promise<RuleRow[]> {
  const { key, behaviour } = pending;
  const spec = deprecatedSpec(key);
  return guarded(release, spec, async () => {
    const setting = `${key.before}=${behaviour.value}`;
    if (behaviour.kind === 'quota') {
      const probe = await quotaProbe(command, release, dir, [setting]);
      return verdict(
        release,
        spec,
        pending.named && refusalNames(probe, key.after),
        `${pending.log}; ${probe.evidence}`,
      );
    }
    const probe = await congestionProbe(
      command,
      release,
      dir,
      ['svc.worker.congestionControl.enabled=true', setting, DISK_BUFFER_CHECK_INTERVAL],
      { batch: DISK_BUFFER_CONGESTION_BATCH },
    );
    return verdict(release, spec, pending.named && probe.congested, `${pending.log}; ${probe.evidence}`);
  });
}

/** The rows of the removed server keys alone: each refused at start (exported for the suite's own tests). */
export async function removedRows(
  target: Target,
  command: readonly string[],
  dir: string,
): Promise<RuleRow[]> {
  const rows: RuleRow[] = [];
  const release = target.release;
  for (const key of REMOVED_SERVER_KEYS) {
    const spec: RuleSpec = {
      ruleId: `9.2/removed-${key.key}`,
      section: '9.2',
      title: `a ${key.role} started with ${key.key} (removed in ${key.release}) refuses to start, saying the key was removed`,
    };
    if (!atLeast(release, key.release)) {
      rows.push(
        notApplicable(release, spec, `${key.key} still exists at ${release} (removed in ${key.release})`),
      );
      continue;
    }
    rows.push(
      ...(await guarded(release, spec, async () => {
        const settings = [
          ...(key.role === 'master'
            ? masterSettings(`${dir}/removed`)
            : workerSettings(`${dir}/removed-worker`)),
          `${key.key}=${key.value}`,
        ];
        const args = [
          ...(key.role === 'worker' ? [`${masterUrlSchemeAt(release)}://127.0.0.1:1`] : []),
          '--release',
          release,
        ];
        const started = await startServer(command, key.role, args, settings);
        if (started.kind === 'listening') {
          await started.server.stop();
          return fail(
            release,
            spec,
            `the ${key.role} started and listened at ${started.httpUrl} with ${key.key} set: the removed key was silently accepted`,
          );
        }
        const message = started.output.split('\n').find((line) => REMOVED_KEY_MESSAGE(key.key).test(line));
        if (started.code === 0)
          return fail(release, spec, `exited 0 (a refusal exits non-zero): ${excerpt(started.output, 300)}`);
        return message === undefined
          ? fail(
              release,
              spec,
              `exited ${started.code} without saying ${key.key} was removed: ${excerpt(started.output, 300)}`,
            )
          : pass(release, spec, `exited ${started.code}: "${excerpt(message, 200)}"`);
      })),
    );
  }
  return rows;
}

const RECOVERY_BACKEND_KEY = 'svc.worker.graceful.shutdown.recoverDbBackend';

const RECOVERY_BACKEND_SPEC: RuleSpec = {
  ruleId: `9.2/behaviour-${RECOVERY_BACKEND_KEY}`,
  section: '9.2',
  title:
    'a worker of this release with graceful shutdown on and no backend set opens its recovery store with the ' +
    'default backend of this release (the store’s files on disk, not only what /conf shows)',
};

/** Which backend wrote the store in `dir`: RocksDB writes OPTIONS files and names itself in LOG; LevelDB does neither. */
function backendOnDisk(dir: string): { backend: 'ROCKSDB' | 'LEVELDB' | undefined; files: string } {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { backend: undefined, files: 'no directory' };
  }
  if (!names.includes('CURRENT')) return { backend: undefined, files: names.join(' ') || 'empty' };
  let log = '';
  try {
    log = readFileSync(path.join(dir, 'LOG'), 'utf8');
  } catch {
    // A store without LOG is judged by its OPTIONS files alone.
  }
  const rocks = names.some((name) => name.startsWith('OPTIONS-')) || /RocksDB/i.test(log);
  return { backend: rocks ? 'ROCKSDB' : 'LEVELDB', files: names.join(' ') };
}

/**
 * A changed default must change behaviour, not only the shown value: a worker of the target's release started with
 * graceful shutdown on opens its recovery store, and the files it leaves say which backend opened it. The worker
 * needs no master for this (the store is opened before its ports listen).
 */
export async function recoveryBackendRow(
  target: Target,
  command: readonly string[],
  dir: string,
): Promise<RuleRow[]> {
  const release = target.release;
  const change = DEFAULT_CHANGES.find((c) => c.key === RECOVERY_BACKEND_KEY);
  if (change === undefined)
    throw new Error(`no default change of ${RECOVERY_BACKEND_KEY} in the expectations`);
  const expected = atLeast(release, change.release) ? change.after[0] : change.before;
  return guarded(release, RECOVERY_BACKEND_SPEC, async () => {
    const own = path.join(dir, 'recovery-backend');
    const settings = [...workerSettings(own), 'svc.worker.graceful.shutdown.enabled=true'];
    const args = [`${masterUrlSchemeAt(release)}://127.0.0.1:1`, '--release', release];
    const started = await startServer(command, 'worker', args, settings);
    if (started.kind === 'exited')
      return fail(
        release,
        RECOVERY_BACKEND_SPEC,
        `the worker refused to start (exit ${started.code}): ${excerpt(started.output, 300)}`,
      );
    await started.server.stop();
    const found = backendOnDisk(path.join(own, 'recover'));
    return verdict(
      release,
      RECOVERY_BACKEND_SPEC,
      found.backend === expected,
      `expected ${expected} (default ${atLeast(release, change.release) ? 'from' : 'before'} ${change.release}); ` +
        `the store on disk is ${found.backend ?? 'missing'} (${excerpt(found.files, 200)})`,
    );
  });
}

export const configCheck = async (target: Target): Promise<RuleRow[]> => {
  const rows = await shownDefaults(target);
  const command = target.serverCommand;
  if (command === undefined) {
    const why = 'the suite was given no server command (--server-command) to start servers of its own';
    for (const key of DEPRECATED_SERVER_KEYS)
      rows.push(notApplicable(target.release, deprecatedSpec(key), why));
    for (const key of REMOVED_SERVER_KEYS)
      rows.push(
        notApplicable(
          target.release,
          { ruleId: `9.2/removed-${key.key}`, section: '9.2', title: `${key.key} refused` },
          why,
        ),
      );
    rows.push(notApplicable(target.release, RECOVERY_BACKEND_SPEC, why));
    return rows;
  }
  const scratch = scratchDir();
  try {
    rows.push(...(await deprecatedRows(target, command, scratch.dir)));
    rows.push(...(await removedRows(target, command, scratch.dir)));
    rows.push(...(await recoveryBackendRow(target, command, scratch.dir)));
  } finally {
    scratch.dispose();
  }
  return rows;
};
