/**
 * Orders workers so that neighbours sit on different racks: racks are taken largest first (ties in first-seen order)
 * and one worker is taken from each in turn, as the reference's generateRackAwareWorkers does. Walking this order,
 * the next worker after a primary is usually on another rack, so a rack-aware replica is found in a step or two.
 */
export function interleaveRacks<T extends { readonly rack: string }>(workers: readonly T[]): T[] {
  const byRack = new Map<string, T[]>();
  for (const worker of workers) {
    const members = byRack.get(worker.rack);
    if (members) members.push(worker);
    else byRack.set(worker.rack, [worker]);
  }
  const racks = [...byRack.values()].sort((a, b) => b.length - a.length);
  const ordered: T[] = [];
  // Racks are sorted largest first, so the racks that still have a worker in a round are always a prefix.
  let withMembers = racks.length;
  for (let round = 0; withMembers > 0; round += 1) {
    while (withMembers > 0 && racks[withMembers - 1]!.length <= round) withMembers -= 1;
    for (let rack = 0; rack < withMembers; rack += 1) ordered.push(racks[rack]![round]!);
  }
  return ordered;
}
