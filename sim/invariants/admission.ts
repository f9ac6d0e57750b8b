import { admitClient, type Admission } from '../../core/release/admission.ts';
import type { Release } from '../../core/release/version.ts';
import type { Hello, HelloReply } from '../../core/handshake/index.ts';
import type { Effect, NodeId } from '../../core/machines/effects.ts';
import type { Observer, World } from '../world/world.ts';

/**
 * admission, handshake by handshake (sim/world/handshakes.ts runs the core's handshake on every connection): a server
 * admits a client's connection exactly when core/release's admitClient does, and refuses it with a message naming
 * both releases. And message by message: every CLIENT_RELEASE_REFUSED a server sends is one core/release's admitClient
 * decides for the server's and the client's releases, with a message naming both; and a server never answers a
 * client it must refuse with anything but that refusal. (That admitted clients get served shows in their jobs
 * finishing.)
 */
export function admissionDecisions(
  isServer: (node: NodeId) => boolean,
  isClient: (node: NodeId) => boolean,
): Observer {
  // One decision per pair of releases: the checker looks at every answer, so it must stay cheap.
  const decisions = new Map<string, Admission>();
  const decide = (server: Release, client: Release): Admission => {
    const key = `${server}|${client}`;
    let decision = decisions.get(key);
    if (decision === undefined) {
      decision = admitClient(server, client);
      decisions.set(key, decision);
    }
    return decision;
  };
  return {
    // Every handshake of a client with a server: admitted exactly when admission allows, refused with its message.
    onHandshake(acceptor: NodeId, opener: NodeId, hello: Hello, reply: HelloReply, world: World) {
      if (!isServer(acceptor) || hello.role !== 'client') return;
      const server = world.releaseOf(acceptor);
      const decision = decide(server, hello.release);
      if (reply.accepted && !decision.admitted) {
        world.fail({
          invariant: 'admission',
          node: acceptor,
          detail: `admitted ${opener}'s connection (client ${hello.release}) although a ${server} server must refuse it: ${decision.message}`,
        });
        return;
      }
      if (reply.accepted || reply.status !== 'CLIENT_RELEASE_REFUSED') return;
      if (decision.admitted) {
        world.fail({
          invariant: 'admission',
          node: acceptor,
          detail: `refused ${opener}'s connection (client ${hello.release}) although a ${server} server admits it: ${reply.message}`,
        });
      } else if (!reply.message.includes(server) || !reply.message.includes(hello.release)) {
        world.fail({
          invariant: 'admission',
          node: acceptor,
          detail: `the refusal of ${opener}'s connection does not name both releases (server ${server}, client ${hello.release}): '${reply.message}'`,
        });
      }
    },
    // Every send: a refusal may come as any answer, and every answer to a client must be one admission allows.
    effects: ['send'],
    onEffect(node: NodeId, effect: Effect, world: World) {
      if (!isServer(node)) return;
      if (effect.kind !== 'send' || !world.hasNode(effect.to)) return;
      const message = effect.message;
      const server = world.releaseOf(node);
      const client = world.releaseOf(effect.to);
      const refusal = 'status' in message && message.status === 'CLIENT_RELEASE_REFUSED';
      if (!refusal) {
        if (effect.inReplyTo === undefined || !isClient(effect.to)) return;
        const decision = decide(server, client);
        if (decision.admitted) return;
        world.fail({
          invariant: 'admission',
          node,
          detail: `answered ${effect.to} (client ${client}) with ${message.type} although a ${server} server must refuse it: ${decision.message}`,
        });
        return;
      }
      const decision = decide(server, client);
      const text = 'message' in message ? message.message : '';
      if (decision.admitted) {
        world.fail({
          invariant: 'admission',
          node,
          detail: `refused ${effect.to} (client ${client}) although a ${server} server admits it: ${text}`,
        });
        return;
      }
      if (!text.includes(server) || !text.includes(client)) {
        world.fail({
          invariant: 'admission',
          node,
          detail: `the refusal of ${effect.to} does not name both releases (server ${server}, client ${client}): '${text}'`,
        });
        return;
      }
    },
  };
}
