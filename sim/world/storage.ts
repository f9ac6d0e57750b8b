import {
  chunksOfWrite,
  lengthOfWrite,
  type Effect,
  type FileRef,
  type IoCompletion,
  type IoError,
} from '../../core/machines/effects.ts';
import type { Rng } from '../../core/rng.ts';
import { isDfsType } from '../../core/domain/index.ts';
import { SimVolume } from './volume.ts';

/** A local disk of a simulated worker, as the worker's own configuration describes it. */
export interface DiskSpec {
  readonly mountPoint: string;
  readonly type: 'HDD' | 'SSD';
  readonly capacityBytes: number;
}

/** Faults switched on for one disk by the fault plan (windows of time) and cleared when the window ends. */
export interface DiskFaults {
  failWrites: boolean;
  failReads: boolean;
  failSyncs: boolean;
  /** Every write fails with NO_SPACE, as if another tenant had filled the disk. */
  full: boolean;
  /** Multiplies every latency of the disk (a dying disk, a noisy neighbour). */
  slowFactor: number;
  /** Every read returns its bytes with one byte inverted; what is stored stays intact. */
  corruptReads: boolean;
}

/** Background probabilities of I/O faults per operation, drawn per seed by the swarm. */
export interface IoRates {
  readonly ioError: number;
  readonly noSpace: number;
}

export type FileEffect = Extract<
  Effect,
  { kind: 'createFile' | 'write' | 'flush' | 'read' | 'moveFile' | 'deleteFile' }
>;

/** A completion to deliver to the node at virtual time `at`. */
export interface Completion {
  readonly at: number;
  readonly input: IoCompletion;
}

interface Device {
  readonly volume: SimVolume;
  readonly latency: Latency;
  readonly faults: DiskFaults | undefined;
  /** Start of the paths of this node's files: '/' on a device of its own, `/<node>@` on the shared DFS. */
  readonly prefix: string;
  /** When the device finishes the operations this node already queued on it. */
  busyUntil: number;
}

interface Latency {
  /** Fixed cost of any operation, ms. */
  readonly op: number;
  /** ms per byte moved. */
  readonly perByte: number;
  readonly sync: number;
}

const MB = 1024 * 1024;
const LATENCY: Readonly<Record<'MEMORY' | 'SSD' | 'HDD' | 'DFS', Latency>> = {
  MEMORY: { op: 0.005, perByte: 1 / ((4000 * MB) / 1000), sync: 0 },
  SSD: { op: 0.08, perByte: 1 / ((500 * MB) / 1000), sync: 0.5 },
  HDD: { op: 1, perByte: 1 / ((150 * MB) / 1000), sync: 6 },
  DFS: { op: 2, perByte: 1 / ((200 * MB) / 1000), sync: 8 },
};

/** The distributed filesystem: one device shared by every worker, surviving any worker's crash. */
export class SharedDfs {
  readonly volume = new SimVolume(Infinity, false);
  /** Switched by the fault plan's dfs faults; every worker's share sees the same switches. */
  readonly faults: DiskFaults = healthyDisk();
}

export function healthyDisk(): DiskFaults {
  return {
    failWrites: false,
    failReads: false,
    failSyncs: false,
    full: false,
    slowFactor: 1,
    corruptReads: false,
  };
}

/**
 * Everything a worker node can store files on: its local disks (one volume each), its memory tier and its
 * share of the DFS. Executes the file effects of the node's machine: the change happens when the effect is issued,
 * in issue order, and the completion (ioDone / ioFailed) arrives after the device's latency, in the order the device
 * accepted the operations. Injected faults fail an operation without changing anything.
 */
export class NodeStorage {
  private readonly disks = new Map<string, Device>();
  private readonly diskTypes = new Map<string, DiskSpec['type']>();
  private readonly memory: Device;
  private readonly dfs: Device | undefined;
  /**
   * Switched by the fault plan's descriptors faults: the process has no file descriptor left (EMFILE), so every
   * create, write, flush and read on a local disk or the DFS, and every move to one, fails with NO_DESCRIPTORS before
   * it reaches the device. The runtime keeps a file's handle between operations and only an operation that has to
   * open one fails (runtime/storage/open-handles.ts): failing them all is no kinder. The memory tier needs no
   * descriptor, and a delete (an unlink) none either. The switch outlasts a restart of the process: what exhausts the
   * descriptors (a flood of connections) is outside it.
   */
  outOfDescriptors = false;

  constructor(
    readonly node: string,
    specs: readonly DiskSpec[],
    dfs: SharedDfs | undefined,
    private readonly rng: Rng,
    private readonly rates: IoRates,
  ) {
    for (const spec of specs) {
      if (this.disks.has(spec.mountPoint))
        throw new RangeError(`${node}: disk ${spec.mountPoint} declared twice`);
      this.diskTypes.set(spec.mountPoint, spec.type);
      this.disks.set(spec.mountPoint, {
        volume: new SimVolume(spec.capacityBytes, false),
        latency: LATENCY[spec.type],
        faults: healthyDisk(),
        prefix: '/',
        busyUntil: 0,
      });
    }
    this.memory = {
      volume: new SimVolume(Infinity, true),
      latency: LATENCY.MEMORY,
      faults: undefined,
      prefix: '/',
      busyUntil: 0,
    };
    this.dfs =
      dfs === undefined
        ? undefined
        : {
            volume: dfs.volume,
            latency: LATENCY.DFS,
            faults: dfs.faults,
            prefix: `/${node.replaceAll('/', '%2F')}@`,
            busyUntil: 0,
          };
  }

  /** The live fault switches of a disk; undefined for an unknown mount point. */
  faultsOf(mountPoint: string): DiskFaults | undefined {
    return this.disks.get(mountPoint)?.faults;
  }

  /** Bytes stored (including not yet synced ones) on a disk. */
  usedBytes(mountPoint: string): number {
    return this.disks.get(mountPoint)?.volume.used ?? 0;
  }

  /** Every file on the local disks, as a restarted worker's driver lists them (memory and the DFS are not listed). */
  diskFiles(): FileRef[] {
    const files: FileRef[] = [];
    for (const [mountPoint, disk] of this.disks) {
      for (const path of disk.volume.paths()) {
        files.push({ id: path.slice(disk.prefix.length), tier: this.diskTypes.get(mountPoint)!, mountPoint });
      }
    }
    return files;
  }

  /** The current length of a file, or undefined when it does not exist. */
  fileLength(file: FileRef): number | undefined {
    const device = this.deviceOf(file);
    return device?.volume.length(pathOf(device, file));
  }

  /** The bytes of a whole file (for invariant checks, not a machine operation: no latency, no faults). */
  peek(file: FileRef): Uint8Array | undefined {
    const device = this.deviceOf(file);
    if (!device) return undefined;
    const path = pathOf(device, file);
    const length = device.volume.length(path);
    if (length === undefined) return undefined;
    const bytes = device.volume.read(path, 0, length);
    return typeof bytes === 'string' ? undefined : bytes;
  }

  /** Executes a file effect now; returns its completion, or undefined for effects that complete silently. */
  execute(effect: FileEffect, now: number): Completion | undefined {
    if (effect.kind === 'deleteFile') {
      const device = this.deviceOf(effect.file);
      if (device) device.volume.remove(pathOf(device, effect.file));
      return undefined;
    }
    const device = this.deviceOf(effect.file);
    if (!device)
      return this.complete(undefined, now, 0, { kind: 'ioFailed', op: effect.op, error: 'NOT_FOUND' });
    const path = pathOf(device, effect.file);
    switch (effect.kind) {
      case 'createFile': {
        const error = this.injected(device, 'write') ?? device.volume.create(path);
        return this.complete(device, now, 0, result(effect.op, error));
      }
      case 'write': {
        const error = this.injected(device, 'write') ?? device.volume.appendAll(path, chunksOfWrite(effect));
        return this.complete(device, now, lengthOfWrite(effect), result(effect.op, error));
      }
      case 'flush': {
        const error = this.injected(device, 'sync') ?? device.volume.sync(path);
        return this.complete(device, now, -1, result(effect.op, error));
      }
      case 'read': {
        const error = this.injected(device, 'read');
        const bytes = error ?? device.volume.read(path, effect.offset, effect.length);
        // The read's bytes are the volume's copy, never what it stores: garbling them leaves the file intact.
        if (typeof bytes !== 'string' && bytes.length > 0 && device.faults?.corruptReads === true) {
          bytes[Math.floor(this.rng.next() * bytes.length)]! ^= 0xff;
        }
        const input: IoCompletion =
          typeof bytes === 'string'
            ? { kind: 'ioFailed', op: effect.op, error: bytes }
            : { kind: 'ioDone', op: effect.op, bytes };
        return this.complete(device, now, typeof bytes === 'string' ? 0 : bytes.length, input);
      }
      case 'moveFile':
        return this.move(effect, device, path, now);
    }
  }

  /** The process ended but the machine did not: the memory tier is gone, the OS still holds unsynced disk data. */
  processExit(): void {
    this.memory.volume.crash();
  }

  /** Power loss: memory is gone, disks and the DFS keep only what was synced. */
  crash(): void {
    this.memory.volume.crash();
    this.memory.busyUntil = 0;
    for (const disk of this.disks.values()) {
      disk.volume.crash();
      disk.busyUntil = 0;
    }
    if (this.dfs) {
      this.dfs.volume.crash(this.dfs.prefix);
      this.dfs.busyUntil = 0;
    }
  }

  /**
   * Eviction: copy to the target tier, make the copy durable, then drop the source. A failure on the target leaves
   * the source untouched, so the worker can retry or fall back.
   */
  private move(effect: Extract<FileEffect, { kind: 'moveFile' }>, source: Device, path: string, now: number) {
    const target = this.deviceOf(effect.to);
    const bytes = source.volume.read(path, 0, source.volume.length(path) ?? 0);
    if (typeof bytes === 'string') return this.complete(source, now, 0, result(effect.op, bytes));
    if (!target) return this.complete(source, now, 0, result(effect.op, 'NOT_FOUND'));
    const targetPath = pathOf(target, effect.to);
    const error =
      this.injected(target, 'write') ??
      target.volume.create(targetPath) ??
      target.volume.append(targetPath, bytes) ??
      target.volume.sync(targetPath);
    if (error !== undefined) {
      if (error !== 'EXISTS') target.volume.remove(targetPath);
      return this.complete(target, now, bytes.length, result(effect.op, error));
    }
    source.volume.remove(path);
    return this.complete(target, now, bytes.length, result(effect.op, undefined));
  }

  private injected(device: Device, op: 'write' | 'read' | 'sync'): IoError | undefined {
    if (this.outOfDescriptors && device !== this.memory) return 'NO_DESCRIPTORS';
    const faults = device.faults;
    if (faults) {
      if (op === 'write' && faults.full) return 'NO_SPACE';
      if ((op === 'write' && faults.failWrites) || (op === 'read' && faults.failReads)) return 'IO_ERROR';
      if (op === 'sync' && faults.failSyncs) return 'IO_ERROR';
    }
    if (device === this.memory) return undefined;
    // Two draws per operation whatever the rates, so that calming one fault leaves the other's draws in place.
    const noSpace = this.rng.next() < this.rates.noSpace;
    const ioError = this.rng.next() < this.rates.ioError;
    if (op === 'write' && noSpace) return 'NO_SPACE';
    return ioError ? 'IO_ERROR' : undefined;
  }

  /** Queues the completion behind the device's earlier operations; `bytes` < 0 means a sync. */
  private complete(device: Device | undefined, now: number, bytes: number, input: IoCompletion): Completion {
    if (!device) return { at: now, input };
    const latency = device.latency;
    const cost = bytes < 0 ? latency.sync : latency.op + bytes * latency.perByte;
    const at = Math.max(now, device.busyUntil) + cost * (device.faults?.slowFactor ?? 1);
    device.busyUntil = at;
    return { at, input };
  }

  private deviceOf(file: FileRef): Device | undefined {
    if (file.tier === 'MEMORY') return this.memory;
    if (isDfsType(file.tier)) return this.dfs;
    return this.disks.get(file.mountPoint);
  }
}

/** The file's path on its device's volume (the volume escapes it for memfs when the bytes get there). */
function pathOf(device: Device, file: FileRef): string {
  return device.prefix + file.id;
}

function result(op: number, error: IoError | undefined): IoCompletion {
  return error === undefined ? { kind: 'ioDone', op } : { kind: 'ioFailed', op, error };
}
