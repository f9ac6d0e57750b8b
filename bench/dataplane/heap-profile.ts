/**
 * What each process of a run allocated, by function: the sampling heap profiles ./probe.mjs writes with
 * `--heap-profile` (objects already collected included, so the figure is allocation, not what is kept), summarised
 * by the function that allocated (self size) and, for the largest, the two frames above it. The profile has no
 * timestamps: it covers the process's whole life, warm-up included.
 *
 *   node --import tsx bench/dataplane/heap-profile.ts <dir or file> [--top n]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

interface HeapFile {
  readonly argv: readonly string[];
  readonly profile: { readonly head: HeapNode };
}

export interface HeapSummary {
  readonly file: string;
  /** What the process ran (its script and first arguments). */
  readonly command: string;
  readonly totalBytes: number;
  /** Allocation sites: the allocating function and its two callers, largest first. */
  readonly top: readonly { readonly site: string; readonly bytes: number }[];
}

function frameName(node: HeapNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url === '' ? '' : ` (${url.split('/').slice(-2).join('/')}:${lineNumber + 1})`;
  return `${functionName === '' ? '(anonymous)' : functionName}${file}`;
}

export function summariseHeapProfile(file: string, top = 15): HeapSummary {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as HeapFile;
  const bySite = new Map<string, number>();
  let totalBytes = 0;
  const walk = (node: HeapNode, callers: readonly string[]): void => {
    const name = frameName(node);
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      const site = [name, ...callers.slice(-2).reverse()].join(' < ');
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, [...callers, name]);
  };
  walk(parsed.profile.head, []);
  const command = parsed.argv
    .filter((arg) => !arg.startsWith('--'))
    .map((arg) => path.basename(arg))
    .slice(0, 3)
    .join(' ');
  return {
    file,
    command,
    totalBytes,
    top: [...bySite]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([site, bytes]) => ({ site, bytes })),
  };
}

export function heapProfileFiles(dirOrFile: string): string[] {
  if (!statSync(dirOrFile).isDirectory()) return [dirOrFile];
  return readdirSync(dirOrFile)
    .filter((name) => name.startsWith('HEAP.') && name.endsWith('.json'))
    .map((name) => path.join(dirOrFile, name));
}

export function heapText(summaries: readonly HeapSummary[]): string {
  const lines: string[] = [];
  for (const summary of summaries) {
    const mb = (bytes: number) => (bytes / 1e6).toFixed(1).padStart(7);
    lines.push(`\n--- ${summary.command}: ${mb(summary.totalBytes).trim()} MB allocated (${summary.file})`);
    for (const { site, bytes } of summary.top) lines.push(`${mb(bytes)} MB  ${site}`);
  }
  return lines.join('\n');
}

if (process.argv[1] === import.meta.filename) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '15' } },
  });
  const top = Number(values.top);
  if (positionals.length !== 1 || !(Number.isInteger(top) && top > 0)) {
    console.error('usage: heap-profile.ts <dir or HEAP.<pid>.json> [--top n]');
    process.exit(2);
  }
  const files = heapProfileFiles(positionals[0]!);
  if (files.length === 0) {
    console.error(`${positionals[0]} holds no HEAP.<pid>.json (run the benchmark with --heap-profile)`);
    process.exit(1);
  }
  console.log(heapText(files.map((file) => summariseHeapProfile(file, top))));
}
