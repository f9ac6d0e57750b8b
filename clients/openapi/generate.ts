// Regenerates the client's types from the project's OpenAPI documents: openapi-typescript (its defaults, as its CLI
// runs them), then prettier with the repository's settings, so the committed files pass `npm run lint` as they are.
//   node --import tsx clients/openapi/generate.ts                 rewrite master-v1.ts and worker-v1.ts here
//   node --import tsx clients/openapi/generate.ts --out <dir>     write them to <dir> instead (the freshness test)
//   node --import tsx clients/openapi/generate.ts --check         exit 1 when a committed file is out of date
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import * as prettier from 'prettier';

const here = path.dirname(fileURLToPath(import.meta.url));
const documents = path.resolve(here, '../../runtime/http/openapi');

/** Each generated file of this folder and the OpenAPI document it comes from. */
export const GENERATED: ReadonlyArray<{ readonly file: string; readonly document: string }> = [
  { file: 'master-v1.ts', document: path.join(documents, 'svc-master-v1.yaml') },
  { file: 'worker-v1.ts', document: path.join(documents, 'svc-worker-v1.yaml') },
];

const NOTE =
  '// Generated from runtime/http/openapi/%DOC% by clients/openapi/generate.ts; regenerate with\n' +
  '// `node --import tsx clients/openapi/generate.ts` after changing the document (see README.md).\n\n';

/** The text of one generated file, formatted as the repository formats `clients/openapi/<file>`. */
export async function generateOne(entry: { file: string; document: string }): Promise<string> {
  const ast = await openapiTS(pathToFileURL(entry.document), { silent: true });
  const source = NOTE.replace('%DOC%', path.basename(entry.document)) + COMMENT_HEADER + astToString(ast);
  const target = path.join(here, entry.file);
  const options = (await prettier.resolveConfig(target)) ?? {};
  return prettier.format(source, { ...options, filepath: target });
}

async function main(argv: readonly string[]): Promise<number> {
  const check = argv.includes('--check');
  const outAt = argv.indexOf('--out');
  const out = outAt >= 0 ? argv[outAt + 1] : undefined;
  if (outAt >= 0 && out === undefined) {
    console.error('generate.ts: --out needs a directory');
    return 2;
  }
  let stale = 0;
  for (const entry of GENERATED) {
    const text = await generateOne(entry);
    const committed = path.join(here, entry.file);
    if (check) {
      let current = '';
      try {
        current = readFileSync(committed, 'utf8');
      } catch {
        // a missing file is stale
      }
      if (current !== text) {
        stale += 1;
        console.error(`clients/openapi/${entry.file} is out of date with ${path.basename(entry.document)}`);
      }
      continue;
    }
    const target = out === undefined ? committed : path.join(path.resolve(out), entry.file);
    writeFileSync(target, text);
    console.log(`wrote ${path.relative(process.cwd(), target) || target}`);
  }
  if (stale > 0) console.error('regenerate with: node --import tsx clients/openapi/generate.ts');
  return stale > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
