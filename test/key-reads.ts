/**
 * Which configuration keys some code path reads: a scan of the sources of core/, conf/ and runtime/ for string
 * literals that are a key's whole name. A template literal counts as a pattern (`svc.${role}.http.port` reads the
 * master's and the worker's key), with a substitution that names a constant of the same file replaced by that
 * constant's own pattern (`${prefix}.basic.file`). A key named only inside a longer text (an error message, a
 * `key=value` line that sets it) is not read by that text. Files that name keys without reading them are left out:
 * tests, fixtures, the registry itself, the contract's table of changes, and the tools that rewrite or document
 * files.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const SCANNED_FOLDERS = ['conf', 'runtime'] as const;

/** Paths (relative to the root, `/` separated) whose key names are not reads. */
const NOT_READERS: readonly RegExp[] = [
  /\.test\.ts$/,
  /(^|\/)fixtures\//,
  /(^|\/)golden\//,
  /(^|\/)testing\//,
  /^conf\/registry\//,
  /^core\/release\/config-changes\.ts$/,
  /^conf\/(docs|migrate|check)\.ts$/,
];

function sourceFiles(root: string, folder: string): string[] {
  const files: string[] = [];
  for (const dirent of readdirSync(path.join(root, folder), { withFileTypes: true })) {
    const relative = `${folder}/${dirent.name}`;
    if (dirent.isDirectory()) files.push(...sourceFiles(root, relative));
    else if (relative.endsWith('.ts') && !NOT_READERS.some((rule) => rule.test(relative)))
      files.push(relative);
  }
  return files;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** One name segment, as a substitution or a registry placeholder (`<id>`) may stand for. */
const SEGMENT = '[A-Za-z0-9_<>-]+';
/** A key's whole name: `svc.` (or the contract's `raft.`) and dotted segments, nothing else (no spaces, no `=`). */
const KEY_LIKE = /^(?:svc|raft)\.[A-Za-z0-9_.<>-]+$/;

/**
 * What a substitution can stand for: the alternatives of its type when that is a union of string literals (`role`
 * of type 'master' | 'worker'), the pattern of a constant of the same file, or else any one name segment.
 */
function patternOfSubstitution(
  expression: ts.Expression,
  checker: ts.TypeChecker,
  constants: ReadonlyMap<string, string>,
): string {
  const type = checker.getTypeAtLocation(expression);
  const members = type.isUnion() ? type.types : [type];
  const literals = members.filter((member) => member.isStringLiteral());
  if (literals.length === members.length) {
    return `(?:${literals.map((member) => escapeRegExp(member.value)).join('|')})`;
  }
  const name = ts.isIdentifier(expression) ? expression.text : undefined;
  return (name === undefined ? undefined : constants.get(name)) ?? SEGMENT;
}

/** The regular-expression source of a literal expression, or undefined when it is not a literal. */
function patternOfLiteral(
  node: ts.Node,
  checker: ts.TypeChecker,
  constants: ReadonlyMap<string, string>,
): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return escapeRegExp(node.text);
  if (!ts.isTemplateExpression(node)) return undefined;
  let source = escapeRegExp(node.head.text);
  for (const span of node.templateSpans) {
    source += patternOfSubstitution(span.expression, checker, constants);
    source += escapeRegExp(span.literal.text);
  }
  return source;
}

/** What one file reads: the patterns of its literals that are a key's whole name. */
function patternsOfFile(file: ts.SourceFile, checker: ts.TypeChecker): string[] {
  const constants = new Map<string, string>();
  const patterns: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer !== undefined) {
      const pattern = patternOfLiteral(node.initializer, checker, constants);
      if (pattern !== undefined) constants.set(node.name.text, pattern);
    }
    const pattern = patternOfLiteral(node, checker, constants);
    if (pattern !== undefined) {
      // Undo the escaping to test the shape of the text the literal stands for.
      const shape = pattern
        .replaceAll(SEGMENT, 'x')
        .replace(/\(\?:[^)]*\)/g, 'x')
        .replace(/\\(.)/g, '$1');
      if (KEY_LIKE.test(shape)) patterns.push(pattern);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return patterns;
}

export interface KeyReads {
  /** Whether some scanned literal is the key's whole name, and where. */
  readersOf(key: string): readonly string[];
}

/** Scans the sources under `root` once. */
export function scanKeyReads(root: string): KeyReads {
  const files = SCANNED_FOLDERS.flatMap((folder) => sourceFiles(root, folder));
  const program = ts.createProgram(
    files.map((file) => path.join(root, file)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      noEmit: true,
      strict: true,
      skipLibCheck: true,
      types: ['node'],
    },
  );
  const checker = program.getTypeChecker();
  const byFile = files.map((file) => {
    const source = program.getSourceFile(path.join(root, file));
    if (source === undefined) throw new Error(`key reads: ${file} is not in the program`);
    return { file, patterns: patternsOfFile(source, checker).map((text) => new RegExp(`^${text}$`)) };
  });
  return {
    readersOf: (key) =>
      byFile.filter(({ patterns }) => patterns.some((pattern) => pattern.test(key))).map(({ file }) => file),
  };
}
