/**
 * Every property the simulator checks, by the name a violation carries. docs/simulation.md lists the same names;
 * a failing seed's report starts with one of them.
 */
export const INVARIANTS = {
  'exactly-once':
    'every record of every winning map attempt is read exactly once by its reducer, and no record of a losing attempt',
  integrity:
    'a reducer never finds data that does not match what the winning attempts reported (counts, CRC)',
  'read-ahead':
    'a reducer never holds more chunks ahead of its consumer (asked for, arrived, handed out and not consumed) than svc.client.fetch.maxReqsInFlight',
  'one-winner': 'at most one attempt of a map wins',
  'replica-placement': "a replica is never placed on its primary's worker",
  'disk-budget':
    'in strict budget mode, no disk is offered more slots than its budget between two of its heartbeats',
  'no-slots-on-unavailable':
    'excluded, lost and shutting-down workers receive no new slots (offers and revives)',
  'epoch-increase': 'a revive always answers with an epoch greater than the one that failed',
  'read-committed': 'a worker serves only committed files to readers',
  'disk-charged-for-disk-faults':
    'a worker marks a disk failed only while handling a failure of that disk it can be blamed for (an I/O error, no space, a timeout): a process out of file descriptors (NO_DESCRIPTORS) charges no disk',
  'committed-survives-graceful-restart':
    'a worker restarted after a graceful shutdown still serves every file it had committed',
  'acknowledged-survives-crash':
    "whatever a node acknowledged (a master's application registrations and manual exclusions, a worker's committed disk files) is in its durable store when the acknowledgement leaves, so a crash of the node keeps it",
  'memory-without-enabling':
    'a client of 0.6.0 or later never has data in memory unless it enabled memory; with the worker guard on, no client does',
  admission:
    'servers refuse exactly the clients core/release says they refuse, with a message naming both releases',
  isolation:
    "with authentication on, a request from a connection that did not prove the identity it needs changes nothing: an intruder cannot destroy, commit, read or write another application's files, nor answer in the master's or a replica's name, nor speak as another's node or take over its route to receive what is meant for it",
  'unexpected-fetch-failure': 'a fetch failure only happens when some fault could have lost data',
  'unanswered-requests-failed':
    'a request a process had not answered when it ended (a crash, an exit, a relaunch) is failed at its sender within one network round trip, unless the sender ended first',
  'silent-peer-shunned':
    'after a process gives a peer up as silent (it owed answers and was unheard from for the silence bound), it starts no request to that peer before it hears from it again',
  'silent-peer-heard-again':
    'once a process hears again from a peer it gave up as silent (the partition healed, the peer is back), it refuses no request to that peer for that silence: the peer is usable for new work',
  liveness: 'once faults stop, every job finishes within a bounded time or fails with an expected error',
  'survives-one-worker-loss':
    'with replication on, a run that loses at most one worker on a calm network, keeping enough healthy workers for a primary and a replica, completes every admitted application',
  quota:
    'with quotas on, the master registers no new shuffle of a user (or in a cluster) whose quota status is over its limit when it decides',
  // The share of seeds that runs a group of masters failing over (sim/ha/group-run.ts, sim/cluster/ha-share.ts).
  'ha-one-leader':
    'in a group of masters, a master serving as leader is the only one whose own state says it may act, and terms only grow: no two act as leader for overlapping revisions',
  'ha-fenced-writes':
    "every write the coordination store applies is the current leader's (its lease holds the leader key)",
  'ha-no-shuffle-lost':
    'a master that starts leading holds every shuffle (and, in the swarm, application) whose registration a leader acknowledged and that was not unregistered or dropped by the rules, and so does the store at the end',
  'ha-liveness': 'after the last failover fault, a master leads again and every client operation completes',
  'ha-fatal': 'a master of the group never meets a fatal effect (the core gave up on the coordination store)',
  'machine-threw': 'a state machine never throws',
  'simulator-threw':
    "the simulator's own models (engine, fault injector, checkers) never throw: a throw there is a simulator bug, reported like a violation so that a long run goes on and the seed replays",
} as const;

export type InvariantName = keyof typeof INVARIANTS;
