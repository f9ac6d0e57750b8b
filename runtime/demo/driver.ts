// `svc demo`: a real shuffle job on a real cluster. The driver starts (or joins) the cluster, runs the application's
// lifecycle manager in this process, hands map and reduce tasks to executor processes, shows their progress,
// verifies every partition against the generator, and stops everything it started.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseMasterUrl } from '../../conf/index.ts';
import { workerKey } from '../../core/domain/worker.ts';
import { startApplication, type Application } from '../client/application.ts';
import {
  clientAuthConf,
  clientTierConf,
  LocalCluster,
  type NodeHttpAddresses,
  type Tier,
} from '../cluster/local-cluster.ts';
import { ExecutorProcess } from './executor-process.ts';
import { mib, seconds, size, throughput } from './format.ts';
import { createProgress, resolveProgressMode, type Progress, type ProgressMode } from './progress.ts';
import type { ClientSettings, FromExecutor } from './protocol.ts';
import {
  bytesOfMap,
  datasetProblem,
  formatDigest,
  recordBytes,
  recordsOfMap,
  sameDigest,
  totalRecords,
  type DatasetSpec,
  type PartitionDigest,
} from './records.ts';

export interface DemoOptions {
  readonly spec: DatasetSpec;
  /** Workers of the local cluster (ignored with `master`). */
  readonly workers: number;
  readonly replication: boolean;
  readonly tier: Tier;
  /** The client release the application and executors behave as; default the current one. */
  readonly release?: string;
  /** Leave the local cluster up after the job, print its addresses, and wait for Ctrl-C. */
  readonly keep: boolean;
  /** `svc://host:port` of an existing cluster: no local cluster is started. */
  readonly master?: string;
  readonly executors: number;
  /** Maps one executor runs at a time; default from the size of a map (see defaultSlots). */
  readonly mapSlots?: number;
  readonly reduceSlots?: number;
  /** Extra client settings for the application and its executors. */
  readonly conf: Readonly<Record<string, string>>;
  readonly progress: ProgressMode;
  /** Attempts of one task before the job fails. */
  readonly maxAttempts: number;
  /** Server log level of the local cluster. */
  readonly logLevel: string;
  /**
   * Application authentication (svc.auth.enabled) for the whole job: the local cluster's servers get an internal
   * secret drawn here, the application a random secret it hands its executors on their stdin. With `master`, the
   * cluster must have it on too. Default off.
   */
  readonly auth?: boolean;
  /**
   * The local cluster's masters as a high-availability group of three on an etcd the cluster starts
   * (docs/high-availability.md): m1 leads, the job runs on it, m2 and m3 follow. Default off.
   */
  readonly ha?: boolean;
}

export interface DemoIo {
  out(line: string): void;
  err(line: string): void;
}

/** Masters of the local group with `ha`: three, so that one can fail and two remain. */
const HA_MASTERS = 3;

const consoleIo: DemoIo = { out: (line) => console.log(line), err: (line) => console.error(line) };

/** Bytes of task data one executor may hold at a time (records and their encoded copy) when choosing slots. */
const EXECUTOR_BUDGET = 512 * 2 ** 20;

/** The default budget of a map's streaming writer (`svc.client.push.maxUnacknowledgedBytes`). */
const MAP_WRITER_BUDGET = 64 * 2 ** 20;

/** Tasks one executor runs at once: as many as fit its budget (a task holds about twice its data), 1 to `max`. */
export function defaultSlots(taskBytes: number, max: number): number {
  return Math.max(1, Math.min(max, Math.floor(EXECUTOR_BUDGET / Math.max(1, 2 * taskBytes))));
}

export class DemoFailure extends Error {}

/** A signal this soon after the first is the same Ctrl-C (relayed by tsx), not a second one. */
const REPEATED_SIGNAL_MS = 1_000;

/**
 * Fails at once when nothing listens at the master's address: the client would otherwise retry its registration
 * until its ask timeouts ran out (minutes).
 */
async function reachable(master: string, timeoutMs = 3_000): Promise<void> {
  const url = parseMasterUrl(master.includes('://') ? master : `svc://${master}`);
  if (!url.ok) throw new DemoFailure(`--master ${master}: ${url.message}`);
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host: url.host, port: url.port });
    const fail = (why: string) => {
      socket.destroy();
      reject(
        new DemoFailure(`no master answers at ${master} (${why}); start one (svc master) or omit --master`),
      );
    };
    socket.setTimeout(timeoutMs, () => fail(`no connection within ${timeoutMs} ms`));
    socket.once('error', (error) => fail(error.message));
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
  });
}

/** Runs the demo and resolves with the process's exit code (0 when every partition verified). */
export async function runDemo(options: DemoOptions, io: DemoIo = consoleIo): Promise<number> {
  const problem = datasetProblem(options.spec);
  if (problem !== undefined) throw new DemoFailure(problem);
  const demo = new Demo(options, io);
  return demo.run();
}

interface Pending {
  readonly executor: ExecutorProcess;
  readonly resolve: (message: FromExecutor) => void;
  readonly reject: (error: Error) => void;
  readonly progress?: (bytes: number) => void;
}

interface PhaseResult {
  readonly ms: number;
  readonly bytes: number;
  readonly retries: number;
}

class Demo {
  private readonly started = performance.now();
  private readonly runDir: string;
  private cluster: LocalCluster | undefined;
  private app: Application | undefined;
  private executors: ExecutorProcess[] = [];
  private verifier: ExecutorProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextTask = 1;
  private progress: Progress | undefined;
  /** --keep: the job is over and the cluster waits for Ctrl-C. */
  private keptUp = false;
  /** A SIGINT or SIGTERM arrived: everything is being stopped. */
  private interrupted = false;
  private readonly spec: DatasetSpec;

  constructor(
    private readonly options: DemoOptions,
    private readonly io: DemoIo,
  ) {
    this.spec = options.spec;
    this.runDir = mkdtempSync(path.join(tmpdir(), 'svc-demo-'));
    mkdirSync(path.join(this.runDir, 'logs'), { recursive: true });
  }

  async run(): Promise<number> {
    const interrupted = this.onSignals();
    try {
      const code = await Promise.race([this.job(), interrupted]);
      return code;
    } catch (error) {
      // Stopping on a signal fails the tasks under way: that is no failure of the job.
      if (this.interrupted) return await interrupted;
      this.progress?.stop();
      this.io.err(
        `svc demo: ${error instanceof DemoFailure ? error.message : String((error as Error).stack ?? error)}`,
      );
      await this.cleanUp({ failed: true });
      return 1;
    } finally {
      this.offSignals();
    }
  }

  // ------------------------------------------------------------------------------------------------- the job

  private async job(): Promise<number> {
    const { spec, options } = this;
    const out = (line: string) => this.io.out(line);
    out(
      `svc demo: ${size(spec.totalBytes)} of ${size(recordBytes(spec))} records (${spec.keyBytes} B keys, ` +
        `${spec.distinctKeys} distinct), ${spec.maps} maps → ${spec.reduces} reduces, replication ` +
        `${options.replication ? 'on' : 'off'}, ${options.tier} tier, seed ${spec.seed}` +
        (options.auth === true ? ', authentication on' : ''),
    );

    if (options.master !== undefined) await reachable(options.master);
    // Executors boot (tsx) while the cluster starts; they join the application once it exists.
    this.executors = Array.from({ length: options.executors }, (_, i) => this.spawn(`executor-${i}`));
    this.verifier = this.spawn('verifier');
    const expected = this.verifier
      .start({ type: 'init', spec })
      .then(() => this.ask(this.verifier!, { type: 'expect' }))
      .then((message) => (message.type === 'expectDone' ? message : undefined));
    expected.catch(() => undefined); // awaited after the job; a failure is reported there

    let master = options.master;
    if (master === undefined) {
      const t = performance.now();
      this.cluster = await LocalCluster.start({
        workers: options.workers,
        tier: options.tier,
        dir: this.runDir,
        keepDir: true, // the directory is this driver's: it removes it, or keeps the logs of a failure
        logLevel: options.logLevel,
        auth: options.auth === true,
        ...(options.ha === true ? { masterGroup: { members: HA_MASTERS } } : {}),
      });
      master = this.cluster.masterUrl;
      out(
        `local cluster: master ${master}, ${options.workers} workers, data under ${this.runDir} ` +
          `(ready in ${seconds(performance.now() - t)})`,
      );
      if (options.ha === true) {
        out(
          `  a group of ${HA_MASTERS} masters on etcd ${this.cluster.etcdEndpoint ?? '?'}: m1 leads, ` +
            `${this.cluster.followers.map((f) => f.options.name.replace('master-', '')).join(' and ')} follow`,
        );
      }
    } else {
      out(`cluster: ${master} (not started here)`);
    }

    const conf: Record<string, string> = {
      ...clientTierConf(options.tier),
      'svc.client.push.replicate.enabled': String(options.replication),
      ...(options.auth === true ? clientAuthConf() : {}),
      ...options.conf,
    };
    try {
      this.app = await startApplication({
        master,
        conf,
        // Its errors reach the job as failed tasks; a Ctrl-C would otherwise print one line per broken push.
        logLevel: 'fatal',
        ...(options.release === undefined ? {} : { release: options.release }),
      });
    } catch (error) {
      throw new DemoFailure(`the application could not start on ${master}: ${(error as Error).message}`);
    }
    const app = this.app;
    const client: Omit<ClientSettings, 'executorId'> = {
      lifecycleManager: app.lifecycleManager,
      appId: app.appId,
      release: app.release,
      conf,
      ...(app.secret === undefined ? {} : { secret: app.secret }),
    };
    await Promise.all(
      this.executors.map((executor) =>
        executor.start({ type: 'init', spec, client: { ...client, executorId: executor.name } }),
      ),
    );
    // A map's writer holds at most its budget (svc.client.push.maxUnacknowledgedBytes, 64m by default), not its output.
    const mapMemory = Math.min(bytesOfMap(spec, 0), MAP_WRITER_BUDGET / 2);
    const mapSlots = options.mapSlots ?? defaultSlots(mapMemory, 4);
    const reduceSlots = options.reduceSlots ?? defaultSlots((2 * spec.totalBytes) / spec.reduces, 8);
    out(
      `application ${app.appId} (release ${app.release}, lifecycle manager ${app.lifecycleManager}); ` +
        `${options.executors} executors running up to ${mapSlots} maps or ${reduceSlots} reduces each`,
    );

    this.progress = createProgress(resolveProgressMode(options.progress), out);
    const jobStarted = performance.now();
    const maps = await this.mapPhase(mapSlots);
    const reduce = await this.reducePhase(reduceSlots);
    this.progress.stop();
    const jobMs = performance.now() - jobStarted;

    out(
      `map phase:    ${spec.maps} maps, ${mib(maps.bytes)} in ${seconds(maps.ms)}: ${throughput(maps.bytes, maps.ms)}` +
        (maps.retries > 0 ? ` (${maps.retries} attempts retried)` : ''),
    );
    out(
      `reduce phase: ${spec.reduces} reduces, ${mib(reduce.result.bytes)} in ${seconds(reduce.result.ms)}: ` +
        `${throughput(reduce.result.bytes, reduce.result.ms)}` +
        (reduce.result.retries > 0 ? ` (${reduce.result.retries} reads retried)` : ''),
    );

    const expectation = await expected.catch((error: Error) => {
      throw new DemoFailure(`the generator's expected digests could not be computed: ${error.message}`);
    });
    if (expectation === undefined) throw new DemoFailure('the verifier gave no digests');
    this.verify(expectation.digests, reduce.digests, reduce.largestGroup);
    this.printWorkerBytes();
    out(
      `job wall time ${seconds(jobMs)} (map ${seconds(maps.ms)}, reduce ${seconds(reduce.result.ms)}): ` +
        `${mib(totalRecords(spec) * recordBytes(spec))} end to end at ` +
        `${throughput(totalRecords(spec) * recordBytes(spec), jobMs)}`,
    );

    if (options.keep && this.cluster !== undefined) return this.keepUp();
    await this.cleanUp({ failed: false });
    out(`done in ${seconds(performance.now() - this.started)} (everything stopped, ${this.runDir} removed)`);
    return 0;
  }

  private async mapPhase(slots: number): Promise<PhaseResult> {
    const { spec } = this;
    const total = totalRecords(spec) * recordBytes(spec);
    const phase = this.progress!.phase('map', total, spec.maps, 'maps');
    const acknowledged = new Array<number>(spec.maps).fill(0);
    let done = 0;
    let peakRss = 0;
    const update = () =>
      phase.update(
        acknowledged.reduce((a, b) => a + b, 0),
        done,
      );
    const started = performance.now();
    const attempts = await this.runTasks(
      Array.from({ length: spec.maps }, (_, m) => m),
      slots,
      async (mapId, executor, attemptId) => {
        const bytes = bytesOfMap(spec, mapId);
        // Acknowledged bytes count each record's 4-byte length too: scale them to record bytes.
        const encoded = bytes + 4 * recordsOfMap(spec, mapId);
        acknowledged[mapId] = 0;
        const answer = await this.ask(executor, { type: 'map', shuffleId: 0, mapId, attemptId }, (ack) => {
          acknowledged[mapId] = Math.min(bytes, Math.floor((ack * bytes) / encoded));
          update();
        });
        if (answer.type !== 'mapDone') throw new Error(`unexpected answer ${answer.type}`);
        if (answer.outcome !== 'won')
          throw new DemoFailure(`map ${mapId} attempt ${attemptId} lost to another attempt`);
        if (answer.bytes !== bytes) {
          throw new DemoFailure(`map ${mapId} wrote ${answer.bytes} bytes, the generator says ${bytes}`);
        }
        acknowledged[mapId] = bytes;
        peakRss = Math.max(peakRss, answer.peakRssBytes);
        done += 1;
        update();
      },
      'map',
    );
    phase.finish();
    this.io.out(`maps done: executor peak RSS ${mib(peakRss)} (measured in the executors)`);
    return { ms: performance.now() - started, bytes: total, retries: attempts };
  }

  private async reducePhase(
    slots: number,
  ): Promise<{ result: PhaseResult; digests: PartitionDigest[]; largestGroup: number }> {
    const { spec } = this;
    const total = totalRecords(spec) * recordBytes(spec);
    const phase = this.progress!.phase('reduce', total, spec.reduces, 'reduces');
    const digests: PartitionDigest[] = new Array<PartitionDigest>(spec.reduces);
    let read = 0;
    let done = 0;
    let largestGroup = 0;
    const started = performance.now();
    const retries = await this.runTasks(
      Array.from({ length: spec.reduces }, (_, p) => p),
      slots,
      async (partition, executor) => {
        const answer = await this.ask(executor, { type: 'reduce', shuffleId: 0, partition });
        if (answer.type !== 'reduceDone') throw new Error(`unexpected answer ${answer.type}`);
        digests[partition] = answer.digest;
        largestGroup = Math.max(largestGroup, answer.largestGroup);
        read += answer.digest.bytes;
        done += 1;
        phase.update(read, done);
      },
      'reduce',
    );
    phase.finish();
    return { result: { ms: performance.now() - started, bytes: read, retries }, digests, largestGroup };
  }

  /**
   * Runs every item on the executors, `slots` at a time on each; a failed attempt runs again (on whichever executor
   * is free) up to maxAttempts. Resolves with the number of retried attempts.
   */
  private async runTasks(
    items: readonly number[],
    slots: number,
    run: (item: number, executor: ExecutorProcess, attempt: number) => Promise<void>,
    what: string,
  ): Promise<number> {
    const queue = items.map((item) => ({ item, attempt: 0 }));
    let retries = 0;
    let failure: Error | undefined;
    const loop = async (executor: ExecutorProcess) => {
      while (failure === undefined && executor.running && !this.interrupted) {
        const next = queue.shift();
        if (next === undefined) return;
        try {
          await run(next.item, executor, next.attempt);
        } catch (error) {
          const err = error as Error;
          if (this.interrupted) return;
          if (error instanceof DemoFailure || next.attempt + 1 >= this.options.maxAttempts) {
            failure ??= new DemoFailure(
              `${what} ${next.item} failed after ${next.attempt + 1} attempt(s): ${err.message}`,
            );
            return;
          }
          retries += 1;
          this.progress?.log(
            `${what} ${next.item} attempt ${next.attempt} failed (${err.message}); retrying`,
          );
          queue.push({ item: next.item, attempt: next.attempt + 1 });
        }
      }
    };
    await Promise.all(
      this.executors.flatMap((executor) => Array.from({ length: slots }, () => loop(executor))),
    );
    if (failure !== undefined) throw failure;
    if (queue.length > 0)
      throw new DemoFailure(`every executor exited with ${queue.length} ${what} tasks left`);
    return retries;
  }

  // ------------------------------------------------------------------------------------------------- checks

  private verify(
    expected: readonly PartitionDigest[],
    got: readonly PartitionDigest[],
    largestGroup: number,
  ): void {
    const wrong: string[] = [];
    for (let p = 0; p < this.spec.reduces; p += 1) {
      const want = expected[p];
      const have = got[p];
      if (want === undefined || have === undefined || !sameDigest(want, have)) {
        wrong.push(
          `  partition ${p}: read ${have === undefined ? 'nothing' : formatDigest(have)}; ` +
            `the generator wrote ${want === undefined ? 'nothing' : formatDigest(want)}`,
        );
      }
    }
    if (wrong.length > 0) {
      throw new DemoFailure(
        `verification FAILED: ${wrong.length} of ${this.spec.reduces} partitions differ from what the maps wrote\n` +
          [...wrong.slice(0, 10), ...(wrong.length > 10 ? [`  … and ${wrong.length - 10} more`] : [])].join(
            '\n',
          ),
      );
    }
    const records = got.reduce((sum, d) => sum + d.records, 0);
    const keys = got.reduce((sum, d) => sum + d.keys, 0);
    this.io.out(
      `verification OK: ${this.spec.reduces} partitions, ${records} records, ${keys} keys (largest group ` +
        `${largestGroup} records): every record exactly once, counts and checksums match the generator`,
    );
  }

  /** The committed file bytes of the shuffle on each worker, as the lifecycle manager knows them. */
  private printWorkerBytes(): void {
    const fileGroup = this.app?.state().shuffles.get(0)?.fileGroup;
    if (fileGroup === undefined) return;
    const held = new Map<string, { primary: number; replica: number; files: number }>();
    for (const id of this.cluster?.workerIds ?? []) held.set(id, { primary: 0, replica: 0, files: 0 });
    for (const group of fileGroup.fileGroups) {
      group.files.forEach((file, i) => {
        const location = group.locations[i];
        if (location === undefined) return;
        const key = workerKey(location.worker);
        const entry = held.get(key) ?? { primary: 0, replica: 0, files: 0 };
        if (file.mode === 'PRIMARY') entry.primary += file.bytes;
        else entry.replica += file.bytes;
        entry.files += 1;
        held.set(key, entry);
      });
    }
    this.io.out(
      `bytes each worker holds (committed partition files of the shuffle, ${this.options.tier} tier):`,
    );
    for (const [key, entry] of held) {
      const index = this.cluster?.workerIds.indexOf(key) ?? -1;
      const name = index >= 0 ? `worker-${index} ` : '';
      this.io.out(
        `  ${name}${key}: ${mib(entry.primary + entry.replica)} in ${entry.files} files ` +
          `(${mib(entry.primary)} primary, ${mib(entry.replica)} replica)`,
      );
    }
  }

  // ------------------------------------------------------------------------------------------------- executors

  private spawn(name: string): ExecutorProcess {
    return new ExecutorProcess(
      name,
      path.join(this.runDir, 'logs', `${name}.log`),
      (message) => this.onMessage(message),
      (executor, code) => this.onExecutorExit(executor, code),
    );
  }

  private ask(
    executor: ExecutorProcess,
    task:
      | { type: 'map'; shuffleId: number; mapId: number; attemptId: number }
      | { type: 'reduce'; shuffleId: number; partition: number }
      | { type: 'expect' },
    progress?: (bytes: number) => void,
  ): Promise<FromExecutor> {
    const id = this.nextTask++;
    return new Promise((resolve, reject) => {
      if (!executor.running) {
        reject(new Error(`${executor.name} is not running${executor.tail()}`));
        return;
      }
      this.pending.set(id, { executor, resolve, reject, ...(progress === undefined ? {} : { progress }) });
      executor.send({ ...task, task: id });
    });
  }

  private onMessage(message: FromExecutor): void {
    if (!('task' in message)) {
      if (message.type === 'fatal') this.progress?.log(`an executor failed: ${message.error}`);
      return;
    }
    const pending = this.pending.get(message.task);
    if (pending === undefined) return;
    if (message.type === 'progress') {
      pending.progress?.(message.bytes);
      return;
    }
    this.pending.delete(message.task);
    if (message.type === 'failed') pending.reject(new Error(message.error));
    else pending.resolve(message);
  }

  private onExecutorExit(executor: ExecutorProcess, code: number | null): void {
    for (const [id, pending] of this.pending) {
      if (pending.executor !== executor) continue;
      this.pending.delete(id);
      pending.reject(new Error(`${executor.name} exited (code ${code})${executor.tail()}`));
    }
  }

  // ------------------------------------------------------------------------------------------------- the end

  /** Stops every process started here; removes the directory, or on failure keeps its logs. */
  private async cleanUp({
    failed,
    interrupted = false,
  }: {
    failed: boolean;
    interrupted?: boolean;
  }): Promise<void> {
    const keepDir = this.options.keep && interrupted;
    await Promise.all(this.allExecutors().map((e) => e.stop(2_000)));
    if (this.app !== undefined && (!interrupted || this.cluster === undefined))
      await this.app.close().catch(() => undefined);
    await this.cluster?.stop({ keepDir: true });
    if (keepDir) return;
    if (failed && (this.executors.length > 0 || this.cluster !== undefined)) {
      for (const entry of existsSync(this.runDir) ? readdirSync(this.runDir) : []) {
        if (entry !== 'logs') rmSync(path.join(this.runDir, entry), { recursive: true, force: true });
      }
      this.io.err(`svc demo: the logs of every process are kept under ${path.join(this.runDir, 'logs')}`);
    } else {
      rmSync(this.runDir, { recursive: true, force: true });
    }
  }

  /** `--keep`: the job's own processes end, the cluster stays up until Ctrl-C. */
  private async keepUp(): Promise<number> {
    await Promise.all(this.allExecutors().map((e) => e.stop()));
    await this.app?.close().catch(() => undefined);
    this.app = undefined;
    const cluster = this.cluster!;
    const description = cluster.describe();
    this.io.out(
      `the cluster stays up (--keep); run another job with: svc demo --master ${description.master}`,
    );
    const http = (addresses: NodeHttpAddresses) => {
      this.io.out(`      management  ${addresses.api}`);
      if (addresses.metrics !== undefined) this.io.out(`      metrics     ${addresses.metrics}`);
      this.io.out(`      swagger     ${addresses.swagger}`);
    };
    this.io.out(`  master  ${description.master}`);
    http(description.masterHttp);
    description.workers.forEach((id, i) => {
      this.io.out(`  worker-${i}  ${id}  data ${path.join(description.dir, `worker-${i}`)}`);
      const addresses = description.workersHttp[i];
      if (addresses !== undefined) http(addresses);
    });
    this.io.out(`  directory ${description.dir} (kept; logs under ${path.join(description.dir, 'logs')})`);
    if (cluster.internalSecretFile !== undefined) {
      this.io.out(
        `  authentication on: servers read svc.auth.internal.secretFile=${cluster.internalSecretFile}; ` +
          'applications need svc.auth.enabled=true',
      );
    }
    this.io.out(`operate it with: svc admin workers --master ${description.masterHttp.base}`);
    this.io.out('press Ctrl-C to stop it');
    this.keptUp = true;
    return new Promise<number>(() => undefined); // onSignals ends it
  }

  private signalHandler: ((signal: NodeJS.Signals) => void) | undefined;

  /** Resolves with 130 once a first SIGINT/SIGTERM stopped everything (0 when --keep was waiting for it). */
  private onSignals(): Promise<number> {
    return new Promise((resolve) => {
      let first: number | undefined;
      this.signalHandler = (signal) => {
        if (first !== undefined) {
          // A Ctrl-C reaches every process of the terminal's group, and `tsx` relays it once more: a repeat within
          // a second is the same Ctrl-C. Later, it is an operator who does not want to wait.
          if (performance.now() - first < REPEATED_SIGNAL_MS) return;
          this.forceExit();
        }
        first = performance.now();
        this.interrupted = true;
        const waiting = this.keptUp;
        this.progress?.stop();
        this.io.err(`\nsvc demo: ${signal}: stopping${this.options.keep ? ' (the directory is kept)' : ''}…`);
        void this.cleanUp({ failed: false, interrupted: true }).then(() => resolve(waiting ? 0 : 130));
      };
      process.on('SIGINT', this.signalHandler);
      process.on('SIGTERM', this.signalHandler);
    });
  }

  /** A second Ctrl-C: kill every process started here, remove the directory (unless --keep), exit 130. */
  private forceExit(): never {
    for (const executor of this.allExecutors()) executor.kill('SIGKILL');
    const servers = [
      ...(this.cluster?.workers ?? []),
      ...(this.cluster?.followers ?? []),
      this.cluster?.master,
    ];
    for (const server of servers) server?.kill('SIGKILL');
    if (!this.options.keep) rmSync(this.runDir, { recursive: true, force: true });
    process.exit(130);
  }

  private allExecutors(): ExecutorProcess[] {
    return [...this.executors, ...(this.verifier === undefined ? [] : [this.verifier])];
  }

  private offSignals(): void {
    if (this.signalHandler === undefined) return;
    process.off('SIGINT', this.signalHandler);
    process.off('SIGTERM', this.signalHandler);
  }
}
