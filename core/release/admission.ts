import { inEffectAt } from './timeline.ts';
import { compareReleases, type Release } from './version.ts';

/**
 * The order in which a cluster is upgraded (contract section 1, rule 7): every group before the next. Within a
 * group the order is free.
 */
export const UPGRADE_ORDER = [['master', 'worker'], ['client']] as const;

/** The upgrade order as every refusal and piece of advice words it. */
export const UPGRADE_ORDER_TEXT = 'upgrade masters and workers first, then clients';

export interface AdmissionRule {
  /** The first server release this rule applies to; it holds until the next rule. */
  readonly since: Release;
  /** The oldest client release such a server accepts. */
  readonly oldestClient: Release;
  readonly contract: string;
}

/**
 * Which client releases a server (master or worker) accepts, by the server's release, oldest first. The newest
 * client a server accepts is its own release (see admitClient and docs/compatibility.md).
 */
export const ADMISSION_HISTORY: readonly [AdmissionRule, ...AdmissionRule[]] = [
  {
    since: '0.2.0',
    oldestClient: '0.2.0',
    contract:
      'Rule 7: a 0.2 client works against a 0.3 master/worker. (0.2.0 is the oldest release svc knows.)',
  },
  {
    since: '0.4.0',
    oldestClient: '0.3.0',
    contract: 'Rule 6: from 0.4.0 on, master/worker do not accept clients older than 0.3.0.',
  },
];

/** The recommendation of rule 6, given as advice whenever client and server releases differ. */
export const SAME_RELEASE_RECOMMENDATION =
  'using the same release for client, master and worker is strongly recommended in production';

export type RefusalReason = 'client-too-old' | 'client-newer-than-server';

export type Admission =
  | {
      readonly admitted: true;
      /** Present when the releases differ: what the operator should do, though nothing fails. */
      readonly advice?: string;
    }
  | { readonly admitted: false; readonly reason: RefusalReason; readonly message: string };

/** The oldest client release a server of `serverRelease` accepts. */
export function oldestAcceptedClient(serverRelease: Release): Release {
  return inEffectAt(ADMISSION_HISTORY, serverRelease).oldestClient;
}

/**
 * Whether a master or worker of `serverRelease` accepts a client of `clientRelease`. Accepted clients span from
 * oldestAcceptedClient(serverRelease) to the server's own release. A client newer than its server is refused on
 * purpose: the contract's upgrade order puts servers first, and a newer client may rely on server behaviour that
 * does not exist yet (for example the 0.6.0 revive storage), so running it is an upgrade done in the wrong order.
 */
export function admitClient(serverRelease: Release, clientRelease: Release): Admission {
  // Asked for every message a server receives, always about the same few pairs: decide each pair once.
  const key = `${serverRelease}/${clientRelease}`;
  const known = ADMISSIONS.get(key);
  if (known !== undefined) return known;
  const admission = decideAdmission(serverRelease, clientRelease);
  if (ADMISSIONS.size < MAX_REMEMBERED_PAIRS) ADMISSIONS.set(key, admission);
  return admission;
}

/**
 * admitClient's answers by `server/client` release pair. Bounded, because a release arrives from the wire: past the
 * bound (far more pairs than real clusters have) further pairs are decided afresh each time.
 */
const ADMISSIONS = new Map<string, Admission>();
const MAX_REMEMBERED_PAIRS = 1_024;

function decideAdmission(serverRelease: Release, clientRelease: Release): Admission {
  const oldest = oldestAcceptedClient(serverRelease);
  if (compareReleases(clientRelease, oldest) < 0) {
    return {
      admitted: false,
      reason: 'client-too-old',
      message:
        `server release ${serverRelease} refuses client release ${clientRelease}: a server of ` +
        `${serverRelease} accepts clients of ${oldest} or newer. Upgrade the client to ${serverRelease} ` +
        `(${UPGRADE_ORDER_TEXT}).`,
    };
  }
  const order = compareReleases(clientRelease, serverRelease);
  if (order > 0) {
    return {
      admitted: false,
      reason: 'client-newer-than-server',
      message:
        `server release ${serverRelease} refuses client release ${clientRelease}: a client may not be newer ` +
        `than its servers (${UPGRADE_ORDER_TEXT}). Upgrade the masters and workers to ${clientRelease}, or run ` +
        `the client at ${serverRelease} until they are.`,
    };
  }
  if (order < 0) {
    return {
      admitted: true,
      advice: `client release ${clientRelease} is older than server release ${serverRelease}; ${SAME_RELEASE_RECOMMENDATION}.`,
    };
  }
  return { admitted: true };
}
