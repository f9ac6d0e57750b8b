import { parseArgs } from 'node:util';

/**
 * The flags of a one-process step benchmark (`lm-steps`, `worker-steps`): each a whole number with a default, read
 * from the command line; a value that is not a whole number of at least its least is refused by name.
 */
export function wholeNumberFlags<K extends string>(
  specs: Readonly<Record<K, { readonly default: number; readonly least: number }>>,
): Record<K, number> {
  const names = Object.keys(specs) as K[];
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: Object.fromEntries(names.map((name) => [name, { type: 'string' as const }])),
  });
  const read = {} as Record<K, number>;
  for (const name of names) {
    const given = values[name];
    const value = given === undefined ? specs[name].default : Number(given);
    if (!Number.isInteger(value) || value < specs[name].least)
      throw new Error(`--${name} '${given}' is not a whole number of at least ${specs[name].least}`);
    read[name] = value;
  }
  return read;
}
