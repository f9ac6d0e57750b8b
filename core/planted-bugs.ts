/**
 * Deliberate bugs the simulator must be able to find (issue: proof that it catches bugs). Core functions that own
 * one of these decisions accept `plantedBug` in their options. No configuration key sets it: only the simulator's
 * configuration builders (sim/cluster/configs.ts) pass it, from its `--bug` option, so a deployment cannot switch one
 * on; the switch only exists to prove that the invariants and the simulator bite.
 */
export const PLANTED_BUGS = [
  /** Slot offer and revive may place a replica on its primary's worker. */
  'replica-on-primary',
  /** A revive reuses the old epoch instead of epoch + 1. */
  'epoch-not-increased',
  /** Readers do not de-duplicate batches or filter losing map attempts. */
  'dedupe-disabled',
  /** A worker restarted after a graceful shutdown forgets the files it had committed. */
  'restart-forgets-committed',
  /** Revive chooses among all of a shuffle's workers, excluded and shutting-down ones included. */
  'revive-ignores-excluded',
  /** A reduce task fetches every chunk at once, whatever its read-ahead budget (svc.client.fetch.maxReqsInFlight). */
  'read-ahead-ignored',
  /** The master places its persist after a step's replies: they may leave before the store holds the change. */
  'ack-before-persist',
  /** A replica's push failure excludes the primary's worker instead of the replica's (the issue-23 failure). */
  'replica-failure-blames-primary',
  /**
   * The transport lets any connection speak as any node and take over any route (core/protocol/speakers.ts): an
   * intruder then receives replies meant for another application's nodes.
   */
  'speaker-rules-ignored',
  /** A worker's back-pressure pauses its push and replicate ports and never reads them again. */
  'back-pressure-never-resumes',
  /**
   * A revive short of workers fails on the lifecycle manager's last view instead of waiting for a fresh master report
   * (the rolling-upgrade failure of issue 26: a restarted worker still listed as shutting down).
   */
  'revive-fails-on-stale-view',
  /** A worker marks a disk failed when its process ran out of file descriptors (NO_DESCRIPTORS), as for IO_ERROR. */
  'descriptors-charged-to-disk',
  /**
   * The interpreter both drivers share (core/interpreter/interpreter.ts) carries out the effects after a `persist`
   * without waiting for the store to confirm the write: a reply may leave before what it promises is durable.
   */
  'effects-before-persist',
  /**
   * A peer that ends (its connection closes, its process dies) leaves the requests it owed unfailed at their
   * senders, who wait out their own deadlines (core/interpreter/unanswered-requests.ts).
   */
  'unanswered-not-failed',
  /** The handshake admits a client whose release the admission rules refuse (core/handshake/admission.ts). */
  'refused-release-admitted',
  /**
   * A peer declared silent is not shunned: requests go on being started to it before it is heard from again (the
   * reference's pooled connection reused after it timed out; core/interpreter/silent-peers.ts).
   */
  'silent-peer-reused',
  /**
   * A peer declared silent stays silent when it is heard from again: a worker back from a partition is refused new
   * work by every process that gave it up (core/interpreter/silent-peers.ts).
   */
  'silent-peer-never-heard',
  /** The master ignores the user quota when it registers a new shuffle (core/machines/master/quota.ts). */
  'quota-user-ignored',
  /**
   * A master of a high-availability group goes on acting as leader past its acting deadline, until the store tells
   * it otherwise (core/ha/leadership.ts): a frozen or partitioned leader acts alongside its successor.
   */
  'ha-acts-past-lease',
  /** The leader's durable writes carry no fence, only compare-and-swap (core/ha/key-layout.ts, planWrites). */
  'ha-unfenced-writes',
  /**
   * The leader confirms a persist when it sends the write, not when the store committed it (core/ha/leadership.ts):
   * what waited for it is acknowledged, and a failover before the commit loses it.
   */
  'ha-confirms-before-commit',
] as const;

export type PlantedBug = (typeof PLANTED_BUGS)[number];

/**
 * The planted bugs of master high availability: proved caught by the swarm's share of seeds whose master is a
 * group (sim/cluster/ha-share.ts) and by the simulator's focused run of a group (sim/ha/).
 */
export const HA_PLANTED_BUGS: readonly PlantedBug[] = [
  'ha-acts-past-lease',
  'ha-unfenced-writes',
  'ha-confirms-before-commit',
];
