/**
 * `${env:VAR}` references in values, replaced by the variable's value from the environment map the runtime passes
 * in. A reference to a variable that is not set, or any other `${...}` form, is an error rather than text kept
 * as it is: a value that silently contains `${env:HOME}` would fail much later and far from its cause.
 */

export type Substituted =
  { readonly ok: true; readonly value: string } | { readonly ok: false; readonly message: string };

const REFERENCE = /\$\{([^}]*)\}/g;

export function substituteEnv(value: string, env: Readonly<Record<string, string | undefined>>): Substituted {
  const failures: string[] = [];
  const result = value.replace(REFERENCE, (whole, inner: string) => {
    const match = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(inner);
    if (!match) {
      failures.push(
        `${whole} is not a reference svc understands; write \${env:NAME} to use environment variable NAME`,
      );
      return whole;
    }
    const variable = match[1]!;
    const replacement = env[variable];
    if (replacement === undefined) {
      failures.push(`${whole} refers to environment variable ${variable}, which is not set`);
      return whole;
    }
    return replacement;
  });
  return failures.length === 0 ? { ok: true, value: result } : { ok: false, message: failures.join('; ') };
}
