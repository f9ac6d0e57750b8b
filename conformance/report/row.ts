/**
 * One verdict of the conformance suite: a contract rule checked against one release of one deployment. Every check
 * module returns these rows; the report (table, JSON, JUnit XML) only formats them. A rule that cannot be checked
 * from outside is `not-applicable` with the reason as its evidence: it never passes silently.
 */
export type Verdict = 'pass' | 'fail' | 'not-applicable';

export interface RuleRow {
  /** Stable id, e.g. `4.4/legacy-workerInfo-get`: the contract section, then a short name. */
  readonly ruleId: string;
  /** The contract section the rule comes from, e.g. `4.4` or `9.2`. */
  readonly section: string;
  /** The release the deployment was checked as, e.g. `0.6.0`. */
  readonly release: string;
  /** One line saying what the rule requires. */
  readonly title: string;
  readonly verdict: Verdict;
  /** What decided the verdict: the request, the status, the field or line; or why the rule does not apply. */
  readonly evidence: string;
}

/** A deployment as the suite reaches it: only what a user can reach. */
export interface Target {
  readonly release: string;
  /** Master's HTTP base URL, e.g. `http://127.0.0.1:9098`. */
  readonly masterUrl: string;
  /** Workers' HTTP base URLs. */
  readonly workerUrls: readonly string[];
  /** The master's data (wire) endpoint for clients, e.g. `svc://127.0.0.1:9097`; absent when not given. */
  readonly dataUrl?: string;
  /** Basic credentials for mutating calls, when the deployment has authentication on. */
  readonly auth?: { readonly user: string; readonly password: string };
  /**
   * How the suite starts a server of this implementation for the rules that need one it started itself (a deprecated
   * or removed key, decommission and exit): the command and its first arguments, to which `master` or `worker` and
   * `--conf key=value` settings are appended. Absent: those rules are not applicable.
   */
  readonly serverCommand?: readonly string[];
  /** Where the nodes serve Prometheus text; default `/metrics/prometheus`. */
  readonly metricsPath?: string;
  /** Where the nodes serve their OpenAPI document from 0.6.0; default `/openapi.json`. */
  readonly openapiPath?: string;
}

/** A group of rules checked together. */
export type Check = (target: Target) => Promise<readonly RuleRow[]>;
