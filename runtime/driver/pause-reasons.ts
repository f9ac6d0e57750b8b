/**
 * Why a server stops reading a service's inbound connections: several causes may hold the same service (the worker's
 * memory budget holds `push` and `replicate`, a full driver backlog holds every service that feeds the node), and
 * reading resumes only once none holds it any more. Each cause sets and clears only its own hold.
 */
export class PauseReasons {
  private readonly holds = new Map<string, Set<string>>();

  constructor(private readonly setPaused: (service: string, paused: boolean) => void) {}

  /** Whether `reason` holds `service` now. */
  isHeldBy(reason: string, service: string): boolean {
    return this.holds.get(service)?.has(reason) ?? false;
  }

  /** Sets or clears `reason`'s hold on `service`; the service is paused while any reason holds it. */
  hold(reason: string, service: string, on: boolean): void {
    let reasons = this.holds.get(service);
    const before = reasons !== undefined && reasons.size > 0;
    if (on) {
      if (reasons === undefined) this.holds.set(service, (reasons = new Set()));
      reasons.add(reason);
    } else {
      reasons?.delete(reason);
    }
    const after = reasons !== undefined && reasons.size > 0;
    if (before !== after) this.setPaused(service, after);
  }
}
