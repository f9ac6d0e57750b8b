/**
 * Configuration handed over by a compute engine under its own prefix (contract section 1, rule 3: a batch engine's
 * client reads `<batch_engine_conf_prefix>.svc.*`): `spark.svc.client.push.replicate.enabled` is read as
 * `svc.client.push.replicate.enabled`, and the engine's other keys (`spark.executor.memory`) are the engine's.
 */
export interface EngineConf {
  /** The keys as svc reads them. */
  readonly conf: Readonly<Record<string, string>>;
  /** Keys set both with and without the prefix, to different values: which one is meant cannot be told. */
  readonly conflicts: readonly string[];
}

export function unprefixedConf(conf: Readonly<Record<string, string>>, prefix: string): EngineConf {
  const own = `${prefix}.`;
  const result: Record<string, string> = {};
  const handedOver: [string, string][] = [];
  for (const [key, value] of Object.entries(conf)) {
    if (!key.startsWith(own)) result[key] = value;
    else if (key.startsWith(`${own}svc.`)) handedOver.push([key.slice(own.length), value]);
  }
  const conflicts: string[] = [];
  for (const [key, value] of handedOver) {
    if (result[key] !== undefined && result[key] !== value) conflicts.push(key);
    result[key] = value;
  }
  return { conf: result, conflicts };
}
