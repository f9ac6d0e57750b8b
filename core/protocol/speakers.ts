import type { NodeId, Principal } from '../machines/effects.ts';
import type { PlantedBug } from '../planted-bugs.ts';
import { applicationOfNode } from './node-ids.ts';

/**
 * Who may speak as which node, and where its replies go: the transport's rules as decisions, so that the runtime
 * (runtime/transport/transport.ts) and the simulator (sim/world/routes.ts) apply the same ones. A node's replies go
 * back on the connection it last spoke on (its route); a node without an address (a task) is reached only that
 * way. With authentication on, a connection that could speak as another application's node, or take over the
 * route of a node that spoke on a proven connection, would receive that node's replies: name theft and route
 * takeover. Both are refused here; the connection that tries is closed.
 */

/** What a connection's handshake established about its peer. */
export interface ConnectionIdentity {
  /** The role the hello claimed. */
  readonly role: 'client' | 'master' | 'worker';
  /** The application a client's hello claimed (and, once checked, proved). */
  readonly application?: string;
}

export interface SpeakerRules {
  /** svc.auth.enabled: without it nothing is proved and every name and route is open, as the contract allows. */
  readonly authenticated: boolean;
  /** Only the simulator's proof tests set it (core/planted-bugs.ts). */
  readonly plantedBug?: PlantedBug;
}

/**
 * Why a connection may not speak as `node` (name theft), or undefined when it may. With authentication on, a client
 * connection speaks only as nodes of the application it claims (core/protocol/node-ids.ts names them): no
 * application can hold another's node names, nor a name of no application's (a worker's, the master's). A server's
 * connection speaks as any node (masters and workers trust each other), once it proved the cluster's secret.
 */
export function nameTheftRefusal(
  rules: SpeakerRules,
  connection: ConnectionIdentity,
  proved: Principal | undefined,
  node: NodeId,
): string | undefined {
  if (!rules.authenticated || rules.plantedBug === 'speaker-rules-ignored') return undefined;
  if (connection.role !== 'client') {
    return proved?.kind === 'server'
      ? undefined
      : `it claims to be a ${connection.role} and speaks as ${node}, but proved ${describePrincipal(proved)}`;
  }
  const owner = applicationOfNode(node);
  if (owner === connection.application) return undefined;
  return (
    `it acts for application ${connection.application ?? '(none)'} and speaks as ${node}, ` +
    (owner === undefined ? 'a node of no application' : `a node of application ${owner}`)
  );
}

/** The connection a node's replies go to now: what its peer proved, and whether it is still open. */
export interface RouteHolder {
  readonly principal: Principal | undefined;
  readonly open: boolean;
}

/**
 * Why a connection that proved `claimant` may not take over `node`'s route from `holder` (route takeover), or
 * undefined when it may. A node's replies go where it last spoke; with authentication on, a connection of another
 * identity may not take over those of a node that spoke on a proven connection that is still open. A connection
 * that proved nothing (yet) holds nothing worth taking, and a closed one holds nothing at all: a task whose
 * process reconnected takes its route back.
 */
export function routeTakeoverRefusal(
  rules: SpeakerRules,
  node: NodeId,
  holder: RouteHolder | undefined,
  claimant: Principal | undefined,
): string | undefined {
  if (!rules.authenticated || holder === undefined || !holder.open || holder.principal === undefined) {
    return undefined;
  }
  if (rules.plantedBug === 'speaker-rules-ignored') return undefined;
  if (samePrincipal(holder.principal, claimant)) return undefined;
  return (
    `it speaks as ${node}, which a connection that proved ${describePrincipal(holder.principal)} ` +
    `speaks as, and it proved ${describePrincipal(claimant)}`
  );
}

export function samePrincipal(a: Principal | undefined, b: Principal | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.kind === 'server' || b.kind === 'server') return a.kind === b.kind;
  return a.appId === b.appId;
}

export function describePrincipal(principal: Principal | undefined): string {
  if (principal === undefined) return 'nothing';
  return principal.kind === 'server' ? 'a server' : `application ${principal.appId}`;
}

/**
 * Routes are aged: a pooled connection carries task after task, each a node of its own that ends without a word,
 * and the table would otherwise grow by one entry per task that ever spoke. A route is forgotten once its node has
 * been silent for longer than `idleMs`; the table is swept when a node speaks, at most every `idleMs / 2`, so
 * that a route lives at least `idleMs` after its node last spoke, and at most twice that while others speak.
 */
export function routeSweepDue(lastSweepAt: number, now: number, idleMs: number): boolean {
  return now - lastSweepAt >= idleMs / 2;
}

/** Whether a route whose node last spoke at `spokeAt` is forgotten at a sweep at `now`. */
export function routeExpired(spokeAt: number, now: number, idleMs: number): boolean {
  return now - spokeAt > idleMs;
}
