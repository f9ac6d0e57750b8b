import { clusterShuffleId, isStageAttempt, MAX_STAGE_ATTEMPT } from '../../core/client/stage-attempts.ts';
import { idList, type PartitionLocation } from '../../core/domain/index.ts';
import type { Input, NodeId } from '../../core/machines/effects.ts';
import { FileGroupCache, type FileGroupAnswer } from '../../core/machines/client/file-group-cache.ts';
import { LocationCache } from '../../core/machines/client/location-cache.ts';
import type { Message } from '../../core/protocol/messages.ts';
import { driverNodeId } from '../../core/protocol/node-ids.ts';
import { mapTaskHasRoom, type MapTaskState } from '../../core/machines/client/map-task.ts';
import { recordRuns } from '../../core/machines/client/records.ts';
import { wantsFileGroup, type ReduceTaskState } from '../../core/machines/client/reduce-task.ts';
import type { NodeDefinition, Observer, World } from '../world/world.ts';
import type { TaskKind } from '../faults/plan.ts';
import { compareOutput, recordKey } from './records.ts';
import { ReduceReading } from './reduce-reading.ts';
import type { AppShape, JobShape } from './shape.ts';

/**
 * The compute engine around the shuffle service (the part of a batch engine's driver that schedules tasks): it
 * launches map attempts (and speculative ones), launches reducers once every map is done, checks each
 * reducer's output against the records the winning attempts wrote, retries failed tasks, reruns a stage on a fetch
 * failure when stage rerun is enabled, and gives every job an outcome. It is the simulator's model of the user of
 * svc, not part of svc: its decisions are the engine's, and svc's machines are driven only through messages.
 *
 * Tasks take time when the workload says so (JobShape.mapComputeMs, reduceComputeMs) and run in the application's
 * task slots (AppShape.taskSlots): a task waits for a free slot in launch order, a map computes before it writes, a
 * reducer computes over what it read before it ends and frees its slot. A stage attempt that is abandoned (stage
 * rerun) gives its slots back at once; its tasks still running are zombies that no longer count.
 *
 * Slots belong to executors (AppShape.executorCores slots each). An executor's shuffle client keeps the file group
 * the first of its reducers of a shuffle was given (core FileGroupCache), and its later reducers of that shuffle,
 * retries included, read with it instead of asking the lifecycle manager; those that start while one of them asks
 * wait, down, for that ask (FileGroupCache.claim), and a SUCCESS starts them (an asker that gives up passes the ask
 * to the oldest). Without task slots every task is its own process and asks for itself.
 *
 * Like a batch engine's driver, it tells the application's lifecycle manager when a shuffle is finished (every
 * reducer of its last read is done, or its stage was abandoned for a rerun) and when the application ends, so that
 * svc releases the slots and files: UnregisterShuffle / UnregisterApplication, handed to the lifecycle manager
 * directly (it lives in the driver's process, so no network lies between them).
 */

/**
 * One run of one job's shuffle. The job's index is the application's shuffle id, and each stage attempt writes the
 * cluster shuffle the client library would give it (core/client/stage-attempts.ts).
 */
export interface JobRun {
  readonly jobIndex: number;
  readonly stageAttempt: number;
  readonly shuffleId: number;
  readonly shape: JobShape;
}

/** Builds the nodes of tasks (the scenario resolves their configuration as of the application's release). */
export interface TaskFactory {
  /** `registeredLocations` is asked when the task starts: the shuffle's locations its executor holds, if any. */
  mapTask(
    app: AppShape,
    job: JobRun,
    mapId: number,
    attemptId: number,
    registeredLocations: () => readonly PartitionLocation[] | undefined,
  ): NodeDefinition<MapTaskState>;
  /** What a map attempt writes, by partition: the engine hands it to the task over time (`records` inputs). */
  mapRecords(
    app: AppShape,
    job: JobRun,
    mapId: number,
    attemptId: number,
  ): readonly (readonly Uint8Array[])[];
  /** `cachedFileGroup` is asked when the task starts (and starts again): what its executor holds, if anything. */
  reduceTask(
    app: AppShape,
    job: JobRun,
    partitionId: number,
    cachedFileGroup: () => FileGroupAnswer | undefined,
  ): NodeDefinition<ReduceTaskState>;
}

export type AppOutcome =
  | { readonly kind: 'running' }
  | { readonly kind: 'done' }
  /** Failed with an error the run considers expected (admission refused, data lost without stage rerun, ...). */
  | { readonly kind: 'failed'; readonly reason: string };

export interface EngineOptions {
  /** Whether an application's jobs run with stage rerun (`svc.client.spark.stageRerun.enabled` as resolved). */
  readonly stageRerun: (app: AppShape) => boolean;
  /** Whether the schedule had any fault that can make committed data unreadable (crash, disk fault, loss). */
  readonly dataLossPossible: () => boolean;
  /**
   * For a reducer that reported its data unreadable: where an intact, committed copy of every epoch it had to read
   * still is, or undefined when some epoch truly has none (invariants/lost-data.ts).
   */
  readonly readableCopies: (world: World, reducer: NodeId, since: number) => string | undefined;
  /**
   * Whether the run can leave the cluster short of room long after the faults: a decommission is one-way and its
   * worker waits for every shuffle it holds to go (up to `svc.worker.decommission.forceExitTimeout`, 6 h), so with
   * too few other workers a job that still holds a shuffle there can never get slots again; small disks fill, and a
   * full disk takes no new file until its worker restarts.
   */
  readonly capacityLossPossible: () => boolean;
  /**
   * Failures of one reducer after the faults stopped, each because its data could not be read (`unreadable`), before
   * a job without stage rerun gives up with the expected "data lost" failure. Any other failure (an unreachable
   * lifecycle manager, a map stage that did not end) is retried for as long as it takes: in calm, a retry must
   * cure it, and the liveness bound judges.
   */
  readonly expectedFailureAttempts: number;
  /** Stage attempts of one job started after the faults stopped; more means data keeps vanishing in calm. */
  readonly maxStageAttemptsAfterCalm: number;
  /** First delay before relaunching a failed task; doubled per failure up to 8 times this. */
  readonly retryDelayMs: number;
  /** Delay of a speculative attempt after its map's first attempt. */
  readonly speculationDelayMs: number;
}

interface MapRun {
  /** The attempt the engine saw win (its MapperEnd was acknowledged as the winner). */
  winner?: number;
  /**
   * The lifecycle manager told an attempt that the map had already ended: some other attempt won, perhaps one
   * whose acknowledgement was lost. For the engine the map is done, as it is for a batch engine's scheduler.
   */
  endedElsewhere: boolean;
  nextAttempt: number;
  readonly running: Set<number>;
  failures: number;
  failuresAfterCalm: number;
  lastError?: string;
}

interface ReduceRun {
  status: 'running' | 'done';
  failures: number;
  /** Failures after the faults stopped because the data could not be read (stage rerun off). */
  unreadableAfterCalm: number;
  lastError?: string;
}

interface AppRun {
  readonly shape: AppShape;
  /** The application's lifecycle manager (attach). */
  lm?: NodeId;
  outcome: AppOutcome;
  job?: JobRun;
  maps: MapRun[];
  reducers: ReduceRun[];
  reducersLaunched: boolean;
  doneReducers: number;
  /** 1 for the first read of the job's shuffle, 2 for the re-read (JobShape.rereadAfterMs). */
  readRound: number;
  stageAttemptsAfterCalm: number;
  /** The refusal a server sent this application's nodes, if any. */
  refusal?: string;
  /** The winning attempt of each map, as the lifecycle manager told a reducer of the current job. */
  lmWinners?: readonly number[];
  /** Tasks holding one of the application's task slots (AppShape.taskSlots): node → slot index (-1: unlimited). */
  readonly slotHolders: Map<NodeId, number>;
  /** Which node holds each slot (only with AppShape.taskSlots). */
  readonly slots: (NodeId | undefined)[];
  /** The shuffle client of each executor (slot index ÷ AppShape.executorCores). */
  readonly executors: ExecutorCaches[];
  /** Launches waiting for a free slot, oldest first. */
  waiting: Launch[];
}

const DEFAULT_EXECUTOR_CORES = 4;

/** What an executor's shuffle client holds: its reducers' file groups and its map tasks' locations, by shuffle. */
interface ExecutorCaches {
  readonly fileGroups: FileGroupCache;
  readonly locations: LocationCache;
}

/** A task launch waiting for a slot: it runs only if its stage attempt is still the application's current one. */
interface Launch {
  readonly shuffleId: number;
  readonly node: NodeId;
  readonly run: (world: World) => void;
}

type TaskRef =
  | {
      readonly kind: 'map';
      readonly app: AppRun;
      readonly shuffleId: number;
      readonly mapId: number;
      readonly attemptId: number;
    }
  | {
      readonly kind: 'reduce';
      readonly app: AppRun;
      readonly shuffleId: number;
      readonly partitionId: number;
    };

/** Simulated time between two writes of a map's application (a map computes between its records). */
const FEED_GAP_MS = 2;
/** Records one write hands the task at most: a map writes its records a few at a time. */
const RECORDS_PER_WRITE = 8;

/** A map attempt's records still to write, in the order its application writes them. */
interface MapWrites {
  readonly partitionIds: readonly number[];
  readonly records: readonly Uint8Array[];
  next: number;
  /** A write is scheduled. */
  scheduled: boolean;
}

/** The records of a map, written round-robin over its partitions (each partition's in order). */
function writesOf(byPartition: readonly (readonly Uint8Array[])[]): MapWrites {
  const partitionIds: number[] = [];
  const records: Uint8Array[] = [];
  const longest = byPartition.reduce((n, p) => Math.max(n, p.length), 0);
  for (let i = 0; i < longest; i += 1) {
    byPartition.forEach((partition, partitionId) => {
      const record = partition[i];
      if (record === undefined) return;
      partitionIds.push(partitionId);
      records.push(record);
    });
  }
  return { partitionIds, records, next: 0, scheduled: false };
}

export class Engine implements Observer {
  private readonly apps: AppRun[];
  private readonly tasks = new Map<NodeId, TaskRef>();
  private readonly settled = new Set<NodeId>();
  /** Map attempts whose executor has the locations they were told (at most one report each, before they end). */
  private readonly toldExecutor = new Set<NodeId>();
  /** Map attempts whose application is still writing. */
  private readonly feeds = new Map<NodeId, MapWrites>();
  /** When each reducer's current process started (a retry starts a new one). */
  private readonly reducerStarts = new Map<NodeId, number>();
  /** What each reducer's consumer took of the chunks it handed out. */
  private readonly reading = new ReduceReading();
  private readonly byNode = new Map<NodeId, AppRun>();
  private calmAt = Infinity;
  private running: number;
  private nextDriverRequest = 1;

  constructor(
    apps: readonly AppShape[],
    private readonly factory: TaskFactory,
    private readonly options: EngineOptions,
  ) {
    this.apps = apps.map((shape) => ({
      shape,
      outcome: { kind: 'running' },
      maps: [],
      reducers: [],
      reducersLaunched: false,
      doneReducers: 0,
      readRound: 1,
      stageAttemptsAfterCalm: 0,
      slotHolders: new Map(),
      slots: [...Array(slotLimit(shape) ?? 0).keys()].map(() => undefined),
      executors: [
        ...Array(Math.ceil((slotLimit(shape) ?? 0) / (shape.executorCores ?? DEFAULT_EXECUTOR_CORES))).keys(),
      ].map(() => ({ fileGroups: new FileGroupCache(), locations: new LocationCache() })),
      waiting: [],
    }));
    this.running = this.apps.length;
  }

  /** When the last fault ends (see EngineOptions). */
  setCalmAt(ms: number): void {
    this.calmAt = ms;
  }

  /** Registers an application's lifecycle manager so that refusals it receives are attributed to the app. */
  attach(node: NodeId, appToken: string): void {
    const app = this.apps.find((a) => a.shape.token === appToken);
    if (!app) return;
    this.byNode.set(node, app);
    app.lm = node;
  }

  /**
   * Schedules the first job of every application at its start time, except those `deferred` names (by token): they
   * start when startApp is called for them.
   */
  start(world: World, deferred: ReadonlySet<string> = new Set()): void {
    for (const app of this.apps) {
      if (!deferred.has(app.shape.token)) this.startApp(world, app.shape.token, app.shape.startAt);
    }
  }

  /** Schedules the first job of one application at `at`. */
  startApp(world: World, token: string, at: number): void {
    const app = this.apps.find((a) => a.shape.token === token);
    if (!app) throw new RangeError(`no application ${token} in this workload`);
    world.schedule(at, `engine: ${app.shape.appId} starts job 0`, (w) => this.startJob(w, app, 0, 0));
  }

  finished(): boolean {
    return this.running === 0;
  }

  /** What each unfinished application is waiting for (for the liveness report). */
  progress(world: World): string[] {
    const lines: string[] = [];
    for (const app of this.apps) {
      if (app.outcome.kind !== 'running') continue;
      const job = app.job;
      if (!job) {
        lines.push(`${app.shape.appId} has not started a job`);
        continue;
      }
      // Maps in the same situation are named together: a job of many maps that all wait for slots would otherwise
      // repeat the same sentence once per map.
      const mapsBySituation = new Map<string, number[]>();
      app.maps.forEach((map, mapId) => {
        if (mapDone(map)) return;
        const attempts = [...map.running].map((attemptId) => {
          const node = this.factory.mapTask(app.shape, job, mapId, attemptId, () => undefined).id;
          const state = world.stateOf(node) as MapTaskState | undefined;
          return `attempt ${attemptId} ${state?.phase ?? 'not started'}`;
        });
        const situation = `${attempts.join(', ') || 'no attempt running'}${map.lastError ? `; last error: ${map.lastError}` : ''}`;
        const ids = mapsBySituation.get(situation);
        if (ids === undefined) mapsBySituation.set(situation, [mapId]);
        else ids.push(mapId);
      });
      const waiting = [...mapsBySituation].map(([situation, ids]) => `${namedMaps(ids)} (${situation})`);
      const reducers = app.reducers.filter((r) => r.status !== 'done');
      if (app.reducersLaunched && reducers.length > 0) {
        const lastError = reducers.find((r) => r.lastError)?.lastError;
        waiting.push(`${reducers.length} reducer(s)${lastError ? ` (last error: ${lastError})` : ''}`);
      }
      if (app.waiting.length > 0) waiting.push(`${app.waiting.length} task(s) queued for a slot`);
      lines.push(
        `${app.shape.appId} job ${job.jobIndex} (shuffle ${job.shuffleId}) waits for ${waiting.join('; ')}`,
      );
    }
    return lines;
  }

  outcomes(): readonly { readonly app: AppShape; readonly outcome: AppOutcome }[] {
    return this.apps.map((a) => ({ app: a.shape, outcome: a.outcome }));
  }

  /** Every received message: a refusal may come in any answer (see onInput). */
  readonly inputs = ['receive'] as const;

  onInput(node: NodeId, input: Input, world: World): void {
    if (input.kind !== 'receive') return;
    const message = input.envelope.message;
    if (message.type === 'GetReducerFileGroupResponse' && message.status === 'SUCCESS') {
      this.onFileGroup(world, node, message);
      return;
    }
    if (!('status' in message) || message.status !== 'CLIENT_RELEASE_REFUSED') return;
    const app = this.byNode.get(node) ?? this.tasks.get(node)?.app;
    if (app && app.refusal === undefined) app.refusal = 'message' in message ? message.message : 'refused';
  }

  onStep(node: NodeId, _effects: unknown, world: World): void {
    const ref = this.tasks.get(node);
    if (ref?.kind === 'reduce' && !wantsFileGroup(world.stateOf(node) as ReduceTaskState)) {
      // The reducer read its file group or gave up on it: an ask it made for its executor passes to a waiter.
      const released = this.executorOf(ref.app, node)?.fileGroups.left(
        ref.app.shape.appId,
        ref.shuffleId,
        node,
      );
      this.startReleased(world, released ?? []);
    }
    if (ref === undefined || this.settled.has(node)) return;
    const app = ref.app;
    if (app.outcome.kind !== 'running' || app.job?.shuffleId !== ref.shuffleId) return;
    if (ref.kind === 'map') this.onMapStep(world, node, ref, world.stateOf(node) as MapTaskState);
    else this.onReduceStep(world, node, ref, world.stateOf(node) as ReduceTaskState);
  }

  /**
   * A reducer learnt the winners from the lifecycle manager. Every attempt the engine saw win must be the one the
   * lifecycle manager names (one-winner), and every reducer of the job must be told the same winners.
   */
  private onFileGroup(world: World, node: NodeId, answer: FileGroupAnswer): void {
    const ref = this.tasks.get(node);
    if (ref?.kind !== 'reduce') return;
    const app = ref.app;
    const released = this.executorOf(app, node)?.fileGroups.answered(app.shape.appId, ref.shuffleId, answer);
    this.startReleased(world, released ?? []);
    if (app.job?.shuffleId !== ref.shuffleId) return;
    const winners = answer.mapAttempts;
    const disagreement = app.maps.findIndex(
      (map, mapId) => map.winner !== undefined && map.winner !== winners[mapId],
    );
    const previous = app.lmWinners;
    if (disagreement >= 0 || (previous && previous.join() !== winners.join())) {
      world.fail({
        invariant: 'one-winner',
        node,
        detail:
          disagreement >= 0
            ? `attempt ${app.maps[disagreement]!.winner} of map ${disagreement} of ${app.shape.appId} shuffle ${ref.shuffleId} won, but the lifecycle manager names attempt ${winners[disagreement]}`
            : `reducers of ${app.shape.appId} shuffle ${ref.shuffleId} were told different winners: [${previous!.join(',')}] and [${winners.join(',')}]`,
      });
      return;
    }
    app.lmWinners = winners;
  }

  // ------------------------------------------------------------------------------------------ jobs

  private startJob(world: World, app: AppRun, jobIndex: number, stageAttempt: number): void {
    if (app.outcome.kind !== 'running') return;
    const shape = app.shape.jobs[jobIndex]!;
    if (!isStageAttempt(stageAttempt)) {
      // As the client library refuses to rerun past its last attempt (application.rerunMapStage).
      this.end(world, app, {
        kind: 'failed',
        reason: `job ${jobIndex} lost its data in ${MAX_STAGE_ATTEMPT} stage attempts, the client's last`,
      });
      return;
    }
    const shuffleId = clusterShuffleId({ shuffleId: jobIndex, stageAttempt });
    const job: JobRun = { jobIndex, stageAttempt, shuffleId, shape };
    app.job = job;
    app.maps = [...Array(shape.numMappers).keys()].map(() => ({
      nextAttempt: 0,
      running: new Set<number>(),
      failures: 0,
      failuresAfterCalm: 0,
      endedElsewhere: false,
    }));
    app.lmWinners = undefined;
    if (world.now >= this.calmAt) app.stageAttemptsAfterCalm += 1;
    app.reducers = [];
    app.reducersLaunched = false;
    app.doneReducers = 0;
    app.readRound = 1;
    // The previous stage attempt's tasks no longer count: their slots are free for this one.
    app.slotHolders.clear();
    app.slots.fill(undefined);
    app.waiting = [];
    for (let mapId = 0; mapId < shape.numMappers; mapId += 1) {
      this.launchMap(world, app, mapId);
      if (shape.speculative.includes(mapId)) {
        world.schedule(world.now + this.options.speculationDelayMs, `engine: speculate map ${mapId}`, (w) => {
          const map = app.maps[mapId];
          if (app.job === job && map && !mapDone(map)) this.launchMap(w, app, mapId);
        });
      }
    }
  }

  /**
   * Launches a map attempt: it counts as running from now on, takes a task slot when one is free, computes for the
   * map's compute time and then starts writing. An attempt whose map ended meanwhile (another attempt won) is not
   * started, as a batch engine kills the other attempts of a finished task.
   */
  private launchMap(world: World, app: AppRun, mapId: number): void {
    const job = app.job!;
    const map = app.maps[mapId]!;
    const attemptId = map.nextAttempt++;
    const def = this.factory.mapTask(app.shape, job, mapId, attemptId, () => {
      const known = this.executorOf(app, def.id)?.locations.lookup(
        app.shape.appId,
        job.shuffleId,
        job.shape.numPartitions,
      );
      if (known !== undefined) world.trace.count('maps.locationsFromExecutor');
      return known;
    });
    this.tasks.set(def.id, { kind: 'map', app, shuffleId: job.shuffleId, mapId, attemptId });
    map.running.add(attemptId);
    const computeMs = job.shape.mapComputeMs?.[mapId] ?? 0;
    // Closures are passed inline, not bound to a name: the TypeScript loader (tsx, keepNames) gives every named
    // closure its name when it is created, a defineProperty that cost more than the engine's own work here.
    this.takeSlot(world, app, def.id, (w) => {
      if (computeMs === 0) this.beginMap(w, app, job, map, def, attemptId);
      else
        w.schedule(
          w.now + computeMs,
          `engine: map ${mapId} attempt ${attemptId} of ${app.shape.appId} computed`,
          (later) => this.beginMap(later, app, job, map, def, attemptId),
        );
    });
  }

  /** The attempt has computed: it starts writing, unless its map ended meanwhile or its stage was abandoned. */
  private beginMap(
    world: World,
    app: AppRun,
    job: JobRun,
    map: MapRun,
    def: NodeDefinition<MapTaskState>,
    attemptId: number,
  ): void {
    if (app.job !== job || app.outcome.kind !== 'running') return;
    if (mapDone(map)) {
      this.endAttempt(world, app, map, def.id, attemptId);
      return;
    }
    world.addNode(def);
    world.start(def.id);
    const ref = this.tasks.get(def.id);
    if (ref?.kind !== 'map') return;
    this.feeds.set(def.id, writesOf(this.factory.mapRecords(app.shape, job, ref.mapId, attemptId)));
    this.feed(world, def.id);
  }

  /**
   * The map's application writes: a few records every FEED_GAP_MS of simulated time while the task has room, then
   * the end. A task without room is fed again from its step that makes room (onMapStep), as an application
   * waits for `drain`; its faults strike between writes, while batches are in flight.
   */
  private feed(world: World, node: NodeId): void {
    const writes = this.feeds.get(node);
    if (writes === undefined || writes.scheduled) return;
    if (this.settled.has(node) || !world.isUp(node)) {
      this.feeds.delete(node);
      return;
    }
    const state = world.stateOf(node) as MapTaskState | undefined;
    if (state === undefined || !mapTaskHasRoom(state)) return;
    writes.scheduled = true;
    world.schedule(world.now + FEED_GAP_MS, `engine: ${node} writes`, (w) => {
      writes.scheduled = false;
      if (this.feeds.get(node) !== writes) return;
      if (this.settled.has(node) || !w.isUp(node)) {
        this.feeds.delete(node);
        return;
      }
      if (!mapTaskHasRoom(w.stateOf(node) as MapTaskState)) return;
      if (writes.next >= writes.records.length) {
        this.feeds.delete(node);
        w.inject(node, { kind: 'recordsEnd' });
        return;
      }
      const end = Math.min(writes.records.length, writes.next + RECORDS_PER_WRITE);
      w.inject(node, {
        kind: 'records',
        ...recordRuns(writes.partitionIds.slice(writes.next, end), writes.records.slice(writes.next, end)),
      });
      writes.next = end;
      this.feed(w, node);
    });
  }

  /** A map attempt is over, whatever its end: the engine stops watching it and its slot is free. */
  private endAttempt(world: World, app: AppRun, map: MapRun, node: NodeId, attemptId: number): void {
    this.settled.add(node);
    this.toldExecutor.delete(node);
    map.running.delete(attemptId);
    this.releaseSlot(world, app, node);
  }

  /** Runs `run` in one of the application's task slots (the lowest free one): now if one is free, else once one is. */
  private takeSlot(world: World, app: AppRun, node: NodeId, run: (world: World) => void): void {
    if (slotLimit(app.shape) === undefined) {
      app.slotHolders.set(node, -1);
      run(world);
      return;
    }
    const free = app.slots.indexOf(undefined);
    if (free >= 0) {
      app.slots[free] = node;
      app.slotHolders.set(node, free);
      run(world);
    } else {
      app.waiting.push({ shuffleId: app.job!.shuffleId, node, run });
    }
  }

  /** The task on `node` ended: its slot goes to the oldest launch still waiting for one of the current stage. */
  private releaseSlot(world: World, app: AppRun, node: NodeId): void {
    const slot = app.slotHolders.get(node);
    if (slot === undefined) return;
    app.slotHolders.delete(node);
    if (slot < 0) return;
    app.slots[slot] = undefined;
    for (;;) {
      const next = app.waiting.shift();
      if (next === undefined) return;
      if (next.shuffleId !== app.job?.shuffleId || app.outcome.kind !== 'running') continue;
      app.slots[slot] = next.node;
      app.slotHolders.set(next.node, slot);
      next.run(world);
      return;
    }
  }

  /** The shuffle client of the executor whose slot `node` holds; none without task slots. */
  private executorOf(app: AppRun, node: NodeId): ExecutorCaches | undefined {
    const slot = app.slotHolders.get(node);
    if (slot === undefined || slot < 0) return undefined;
    return app.executors[Math.floor(slot / (app.shape.executorCores ?? DEFAULT_EXECUTOR_CORES))];
  }

  private onMapStep(
    world: World,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'map' }>,
    state: MapTaskState,
  ): void {
    const app = ref.app;
    const map = app.maps[ref.mapId]!;
    switch (state.phase) {
      case 'won':
        this.tellExecutor(app, node, ref, state);
        this.endAttempt(world, app, map, node, ref.attemptId);
        if (map.winner !== undefined && map.winner !== ref.attemptId) {
          world.fail({
            invariant: 'one-winner',
            node,
            detail: `attempts ${map.winner} and ${ref.attemptId} of map ${ref.mapId} of ${app.shape.appId} shuffle ${ref.shuffleId} both won`,
          });
          return;
        }
        map.winner = ref.attemptId;
        if (app.maps.every(mapDone)) this.launchReducers(world, app);
        return;
      case 'lost':
        this.endAttempt(world, app, map, node, ref.attemptId);
        map.endedElsewhere = true;
        if (app.maps.every(mapDone)) this.launchReducers(world, app);
        return;
      case 'failed':
        this.mapAttemptFailed(world, node, ref, state.error ?? 'no reason given');
        return;
      case 'pushing':
        if (!this.toldExecutor.has(node)) this.tellExecutor(app, node, ref, state);
        this.feed(world, node);
        return;
      case 'registering':
        this.feed(world, node);
        return;
      case 'ending':
        return;
    }
  }

  /** The attempt's executor keeps the locations it was told (and, once it won, those it revived to). */
  private tellExecutor(
    app: AppRun,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'map' }>,
    state: MapTaskState,
  ): void {
    if (state.phase === 'won') this.toldExecutor.delete(node);
    else this.toldExecutor.add(node);
    this.executorOf(app, node)?.locations.remember(app.shape.appId, ref.shuffleId, state.locations);
  }

  /** A map attempt failed (or its executor was lost): once no attempt of the map runs, the map is tried again. */
  private mapAttemptFailed(
    world: World,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'map' }>,
    error: string,
  ): void {
    const app = ref.app;
    const map = app.maps[ref.mapId]!;
    this.endAttempt(world, app, map, node, ref.attemptId);
    map.lastError = error;
    if (this.failOnRefusal(world, app)) return;
    if ((world.stateOf(node) as MapTaskState | undefined)?.errorStatus === 'QUOTA_EXCEEDED') {
      // The user is over its quota: an expected end, as an engine would fall back or fail the job.
      this.end(world, app, { kind: 'failed', reason: `over quota: ${error}` });
      return;
    }
    if (mapDone(map) || map.running.size > 0) return;
    map.failures += 1;
    if (world.now >= this.calmAt) map.failuresAfterCalm += 1;
    if (this.outOfSlotsForGood(map)) {
      // As a batch engine gives up on a task after spark.task.maxFailures (4) attempts; counted only after the
      // faults, so that a storm never ends a job that calm would let finish.
      this.end(world, app, {
        kind: 'failed',
        reason:
          `map ${ref.mapId} failed ${map.failuresAfterCalm} times after the faults stopped, with the cluster ` +
          `short of room (a decommissioning worker holds the shuffle, or small disks are full): ${map.lastError}`,
      });
      return;
    }
    // Otherwise retried for as long as it takes: the run's liveness deadline judges whether that is too long.
    world.schedule(
      world.now + this.backoff(map.failures),
      `engine: retry map ${ref.mapId} of ${app.shape.appId}`,
      (w) => {
        if (app.job?.shuffleId === ref.shuffleId && !mapDone(map) && map.running.size === 0) {
          this.launchMap(w, app, ref.mapId);
        }
      },
    );
  }

  private launchReducers(world: World, app: AppRun): void {
    if (app.reducersLaunched) return;
    app.reducersLaunched = true;
    const job = app.job!;
    app.reducers = [...Array(job.shape.numPartitions).keys()].map(() => ({
      status: 'running' as const,
      failures: 0,
      unreadableAfterCalm: 0,
    }));
    for (let partitionId = 0; partitionId < job.shape.numPartitions; partitionId += 1) {
      this.launchReduce(world, app, partitionId);
    }
  }

  /** Launches a reducer in a task slot (when one is free): it reads its partition at once, then computes. */
  private launchReduce(world: World, app: AppRun, partitionId: number): void {
    const job = app.job!;
    const def = this.factory.reduceTask(app.shape, job, partitionId, () =>
      this.executorOf(app, def.id)?.fileGroups.lookup(app.shape.appId, job.shuffleId),
    );
    this.takeSlot(world, app, def.id, (w) => {
      this.tasks.set(def.id, { kind: 'reduce', app, shuffleId: job.shuffleId, partitionId });
      this.settled.delete(def.id);
      this.reducerStarts.set(def.id, w.now);
      this.reading.begin(def.id);
      // Another reducer of the executor asking for the file group: this one starts once that ask is answered.
      const claim = this.executorOf(app, def.id)?.fileGroups.claim(app.shape.appId, job.shuffleId, def.id);
      if (claim?.kind === 'wait') {
        w.trace.count('reduces.fileGroupWaited');
        if (!w.hasNode(def.id)) w.addNode(def);
        else if (w.isUp(def.id)) w.exit(def.id, 0, 'the reducer is retried once its file group is known');
        return;
      }
      if (w.hasNode(def.id)) {
        // A retry of the same reducer: a new process in the same slot.
        w.relaunch(def.id);
      } else {
        w.addNode(def);
        w.start(def.id);
      }
    });
  }

  /**
   * Starts the reducers an executor's file-group cache released: each reads from the cache, or asks on its own.
   * Those of an abandoned stage attempt, or of an application that ended, stay down.
   */
  private startReleased(world: World, released: readonly NodeId[]): void {
    for (const node of released) {
      const ref = this.tasks.get(node);
      if (ref?.kind !== 'reduce' || this.settled.has(node) || world.isUp(node)) continue;
      const app = ref.app;
      if (app.outcome.kind !== 'running' || app.job?.shuffleId !== ref.shuffleId) continue;
      world.start(node);
    }
  }

  private onReduceStep(
    world: World,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'reduce' }>,
    state: ReduceTaskState,
  ): void {
    const app = ref.app;
    const reducer = app.reducers[ref.partitionId]!;
    // The reducer computes over its records as they come: a chunk takes an eighth of its compute time.
    const consumeMs = Math.round((app.job!.shape.reduceComputeMs?.[ref.partitionId] ?? 0) / 8);
    const overBudget = this.reading.afterStep(world, node, state, consumeMs);
    if (overBudget !== undefined) {
      world.fail({ invariant: 'read-ahead', node, detail: overBudget });
      return;
    }
    if (state.phase === 'done') {
      this.settled.add(node);
      const problem = compareOutput(this.reading.recordsOf(node), this.expectedKeys(app, ref.partitionId));
      if (problem !== undefined) {
        world.fail({
          invariant: 'exactly-once',
          node,
          detail: `reducer of partition ${ref.partitionId} of ${app.shape.appId} shuffle ${ref.shuffleId} read the wrong records: ${problem}`,
        });
        return;
      }
      const job = app.job!;
      const computeMs = job.shape.reduceComputeMs?.[ref.partitionId] ?? 0;
      if (computeMs === 0) this.endReducer(world, app, job, node, reducer);
      else
        world.schedule(
          world.now + computeMs,
          `engine: reducer ${ref.partitionId} of ${app.shape.appId} computed`,
          (w) => this.endReducer(w, app, job, node, reducer),
        );
      return;
    }
    if (state.phase !== 'failed') return;
    this.reducerFailed(world, node, ref, state.error ?? { kind: 'failure', message: 'no reason given' });
  }

  /** A reducer failed (or its executor was lost): judged by its error, then run again unless the job must end. */
  private reducerFailed(
    world: World,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'reduce' }>,
    error: NonNullable<ReduceTaskState['error']>,
  ): void {
    const app = ref.app;
    const reducer = app.reducers[ref.partitionId]!;
    this.settled.add(node);
    this.releaseSlot(world, app, node);
    if (this.failOnRefusal(world, app)) return;
    if (error.kind === 'integrity') {
      world.fail({
        invariant: 'integrity',
        node,
        detail: `reducer of partition ${ref.partitionId} of ${app.shape.appId} shuffle ${ref.shuffleId}: ${error.message}`,
      });
      return;
    }
    if (this.lostNothing(world, node, ref, error)) return;
    if (error.kind === 'fetch-failure') {
      this.onFetchFailure(world, app, node, error.message);
      return;
    }
    reducer.failures += 1;
    reducer.lastError = error.message;
    if (error.kind === 'unreadable' && world.now >= this.calmAt) reducer.unreadableAfterCalm += 1;
    if (
      reducer.unreadableAfterCalm > this.options.expectedFailureAttempts &&
      !this.options.stageRerun(app.shape) &&
      this.options.dataLossPossible()
    ) {
      this.end(world, app, {
        kind: 'failed',
        reason: `fetch failure with stage rerun disabled (svc.client.spark.stageRerun.enabled=false): ${error.message}`,
      });
      return;
    }
    world.schedule(
      world.now + this.backoff(reducer.failures),
      `engine: retry reducer ${ref.partitionId} of ${app.shape.appId}`,
      (w) => {
        if (app.job?.shuffleId === ref.shuffleId && app.outcome.kind === 'running')
          this.launchReduce(w, app, ref.partitionId);
      },
    );
  }

  /**
   * A reducer that started after the faults ended and reports its data unreadable (a fetch failure, or the same with
   * stage rerun off) while every epoch of it has an intact committed copy on a running worker: nothing stood between
   * it and those copies, so the failure is a bug, not lost data (unexpected-fetch-failure). Before the faults end a
   * partition or a fault window may explain it, and the run-wide rule (onFetchFailure) judges.
   */
  private lostNothing(
    world: World,
    node: NodeId,
    ref: Extract<TaskRef, { kind: 'reduce' }>,
    error: NonNullable<ReduceTaskState['error']>,
  ): boolean {
    if (error.kind !== 'unreadable' && error.kind !== 'fetch-failure') return false;
    const started = this.reducerStarts.get(node) ?? -Infinity;
    if (started < this.calmAt) return false;
    const readable = this.options.readableCopies(world, node, started);
    if (readable === undefined) return false;
    world.fail({
      invariant: 'unexpected-fetch-failure',
      node,
      detail:
        `reducer of partition ${ref.partitionId} of ${ref.app.shape.appId} shuffle ${ref.shuffleId} started after ` +
        `the faults ended and found its data unreadable, yet every epoch has an intact committed copy on a worker ` +
        `that ran throughout (${readable}): ${error.message}`,
    });
    return true;
  }

  /**
   * A fault: the executor running one of the application's tasks is lost. The running map attempt (or reducer) of
   * the current job with the lowest map id (partition id) whose process is up dies at once, mid-push or mid-read,
   * and fails as a task whose executor was lost: a new attempt of the map, the reducer again. (A real executor
   * loss takes every task of the executor; one task is the smallest such fault.)
   */
  killTask(world: World, appToken: string, task: TaskKind): void {
    const app = this.apps.find((candidate) => candidate.shape.token === appToken);
    if (app === undefined || app.outcome.kind !== 'running' || app.job === undefined) return;
    const shuffleId = app.job.shuffleId;
    let victim: { node: NodeId; ref: TaskRef; id: number } | undefined;
    for (const [node, ref] of this.tasks) {
      if (ref.kind !== task || ref.app !== app || ref.shuffleId !== shuffleId) continue;
      if (this.settled.has(node) || !world.hasNode(node) || !world.isUp(node)) continue;
      const id = ref.kind === 'map' ? ref.mapId : ref.partitionId;
      if (victim === undefined || id < victim.id) victim = { node, ref, id };
    }
    if (victim === undefined) return;
    // The executor's process is gone, and what its shuffle client had cached with it (its slots get a new one).
    const executor = this.executorOf(app, victim.node);
    const released = executor?.fileGroups.forget(app.shape.appId, shuffleId) ?? [];
    executor?.locations.forget(app.shape.appId, shuffleId);
    world.crash(victim.node);
    // Its reducers waiting for the lost process's ask start, and ask on their own.
    this.startReleased(world, released);
    const message = 'the executor running the task was lost';
    if (victim.ref.kind === 'map') this.mapAttemptFailed(world, victim.node, victim.ref, message);
    else this.reducerFailed(world, victim.node, victim.ref, { kind: 'failure', message });
  }

  /** A reducer has read and computed: its slot is free, and the read is over once every reducer is. */
  private endReducer(world: World, app: AppRun, job: JobRun, node: NodeId, reducer: ReduceRun): void {
    if (app.job !== job || app.outcome.kind !== 'running') return;
    this.releaseSlot(world, app, node);
    reducer.status = 'done';
    app.doneReducers += 1;
    if (app.doneReducers === app.reducers.length) this.finishRead(world, app);
  }

  private onFetchFailure(world: World, app: AppRun, node: NodeId, message: string): void {
    const job = app.job!;
    if (!this.options.dataLossPossible()) {
      world.fail({
        invariant: 'unexpected-fetch-failure',
        node,
        detail: `${app.shape.appId} shuffle ${job.shuffleId}: a fetch failure although no fault could have lost data: ${message}`,
      });
      return;
    }
    if (app.stageAttemptsAfterCalm >= this.options.maxStageAttemptsAfterCalm) {
      world.fail({
        invariant: 'liveness',
        node,
        detail:
          `${app.shape.appId} job ${job.jobIndex} reran its map stage ${app.stageAttemptsAfterCalm} times after the ` +
          `faults stopped and still lost data: ${message}`,
      });
      return;
    }
    const next = job.stageAttempt + 1;
    world.schedule(
      world.now,
      `engine: ${app.shape.appId} reruns the map stage of job ${job.jobIndex} (fetch failure)`,
      (w) => {
        // Several reducers may report the same fetch failure before the rerun starts: it starts once.
        if (app.job !== job || app.outcome.kind !== 'running') return;
        // The abandoned shuffle is released: the rerun writes a new one, and no task of the old one counts any more.
        this.unregisterShuffle(w, app, job.shuffleId);
        this.startJob(w, app, job.jobIndex, next);
      },
    );
  }

  /** Every reducer read its partition: read the shuffle once more later, or finish the job. */
  private finishRead(world: World, app: AppRun): void {
    const job = app.job!;
    if (app.readRound > 1 || job.shape.rereadAfterMs === undefined) {
      this.finishJob(world, app);
      return;
    }
    app.readRound = 2;
    world.schedule(
      world.now + job.shape.rereadAfterMs,
      `engine: ${app.shape.appId} reads shuffle ${job.shuffleId} again`,
      (w) => {
        if (app.job !== job || app.outcome.kind !== 'running') return;
        app.doneReducers = 0;
        for (const reducer of app.reducers) reducer.status = 'running';
        for (let partitionId = 0; partitionId < app.reducers.length; partitionId += 1)
          this.launchReduce(w, app, partitionId);
      },
    );
  }

  private finishJob(world: World, app: AppRun): void {
    // Every reducer of the shuffle's last read is done: nothing reads it any more.
    this.unregisterShuffle(world, app, app.job!.shuffleId);
    const next = app.job!.jobIndex + 1;
    if (next < app.shape.jobs.length) {
      world.schedule(world.now, `engine: ${app.shape.appId} starts job ${next}`, (w) =>
        this.startJob(w, app, next, 0),
      );
    } else {
      this.end(world, app, { kind: 'done' });
    }
  }

  /** A task failed after a server refused the application: the job ends with the admission error. */
  private failOnRefusal(world: World, app: AppRun): boolean {
    if (app.refusal === undefined) return false;
    this.end(world, app, { kind: 'failed', reason: `refused by admission: ${app.refusal}` });
    return true;
  }

  /** The application ends, however it went: the driver unregisters it, which releases whatever it still holds. */
  private end(world: World, app: AppRun, outcome: Exclude<AppOutcome, { kind: 'running' }>): void {
    if (app.outcome.kind !== 'running') return;
    app.outcome = outcome;
    this.running -= 1;
    this.tellLifecycleManager(world, app, { type: 'UnregisterApplication', appId: app.shape.appId });
  }

  private unregisterShuffle(world: World, app: AppRun, shuffleId: number): void {
    for (const executor of app.executors) {
      executor.fileGroups.forget(app.shape.appId, shuffleId);
      executor.locations.forget(app.shape.appId, shuffleId);
    }
    this.tellLifecycleManager(world, app, { type: 'UnregisterShuffle', appId: app.shape.appId, shuffleId });
  }

  /**
   * Hands a driver request to the lifecycle manager. The driver is no node of the world, so the manager's answer is
   * refused on the way back and ignored: the engine, like a batch engine's driver, does not wait for it.
   */
  private tellLifecycleManager(world: World, app: AppRun, message: Message): void {
    if (app.lm === undefined || !world.isUp(app.lm)) return;
    world.inject(app.lm, {
      kind: 'receive',
      envelope: {
        from: driverNodeId(app.shape.appId),
        to: app.lm,
        fromRelease: app.shape.clientRelease,
        // The engine's driver is the application's own process.
        principal: { kind: 'application', appId: app.shape.appId },
        requestId: this.nextDriverRequest++,
        message,
      },
    });
  }

  private expectedKeys(app: AppRun, partitionId: number): string[] {
    const job = app.job!;
    const keys: string[] = [];
    for (let mapId = 0; mapId < job.shape.numMappers; mapId += 1) {
      const attemptId = app.maps[mapId]!.winner ?? app.lmWinners?.[mapId] ?? -1;
      const count = job.shape.records[mapId]?.[partitionId] ?? 0;
      for (let index = 0; index < count; index += 1) {
        keys.push(
          recordKey({
            appId: app.shape.appId,
            shuffleId: job.shuffleId,
            mapId,
            attemptId,
            partitionId,
            index,
          }),
        );
      }
    }
    return keys;
  }

  /**
   * A map that keeps failing after the faults because no slots can be had, in a run where a decommission may hold
   * capacity for hours: the expected end of its job. Any other repeated failure is retried, and the liveness
   * deadline says whether that took too long.
   */
  private outOfSlotsForGood(map: MapRun): boolean {
    return (
      map.failuresAfterCalm > this.options.expectedFailureAttempts &&
      (map.lastError ?? '').includes('SLOT_NOT_AVAILABLE') &&
      this.options.capacityLossPossible()
    );
  }

  private backoff(failures: number): number {
    return this.options.retryDelayMs * 2 ** Math.min(3, Math.max(0, failures - 1));
  }
}

/** The application's task slots; undefined when every task runs at once. */
function slotLimit(shape: AppShape): number | undefined {
  return shape.taskSlots !== undefined && Number.isFinite(shape.taskSlots) ? shape.taskSlots : undefined;
}

function mapDone(map: MapRun): boolean {
  return map.winner !== undefined || map.endedElsewhere;
}

/** `map 3`, `maps 0, 1, 2`, or with many ids `maps 0, 1, 2, 3, 4, 5, 6, 7 and 12 more`. */
export function namedMaps(ids: readonly number[]): string {
  return `${ids.length === 1 ? 'map' : 'maps'} ${idList(ids)}`;
}
