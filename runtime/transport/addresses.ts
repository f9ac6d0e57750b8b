import { parseWorkerKey, type WorkerId } from '../../core/domain/worker.ts';
import type { NodeId } from '../../core/machines/effects.ts';
import type { Message } from '../../core/protocol/messages.ts';

/** A TCP endpoint. */
export interface Address {
  readonly host: string;
  readonly port: number;
}

export function addressText(address: Address): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

import { workerServiceFor, type WorkerService } from '../../core/protocol/services.ts';

function workerPort(worker: WorkerId, service: WorkerService): number {
  switch (service) {
    case 'rpc':
      return worker.rpcPort;
    case 'push':
      return worker.pushPort;
    case 'fetch':
      return worker.fetchPort;
    case 'replicate':
      return worker.replicatePort;
  }
}

/**
 * Where to connect to reach a node. Workers carry their address in their id; masters and lifecycle managers are
 * known by configuration (`svc.master.endpoints`) or were handed over by the application (an executor learns its
 * lifecycle manager's address as a Spark executor learns its driver's). Tasks have no address: they are reached
 * only through the connection they spoke on.
 */
export class AddressBook {
  private readonly known = new Map<NodeId, Address>();
  private readonly workers = new Map<NodeId, WorkerId | null>();

  set(node: NodeId, address: Address): void {
    this.known.set(node, address);
  }

  resolve(node: NodeId, message: Message): Address | undefined {
    return this.reach(node, message)?.address;
  }

  /**
   * Where to connect, and the service of the port connected to: `rpc` for a node known by configuration or
   * hand-over (masters, lifecycle managers), a worker's port by the message (core/protocol/services.ts).
   */
  reach(node: NodeId, message: Message): { address: Address; service: WorkerService } | undefined {
    const known = this.known.get(node);
    if (known !== undefined) return { address: known, service: 'rpc' };
    const worker = this.workerOf(node);
    if (worker === undefined) return undefined;
    const service = workerServiceFor(message);
    return { address: { host: worker.host, port: workerPort(worker, service) }, service };
  }

  private workerOf(node: NodeId): WorkerId | undefined {
    let worker = this.workers.get(node);
    if (worker === undefined) {
      try {
        worker = parseWorkerKey(node);
      } catch {
        worker = null;
      }
      if (this.workers.size < 100_000) this.workers.set(node, worker);
    }
    return worker ?? undefined;
  }
}
