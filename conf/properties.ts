/**
 * The properties file format of `svc-defaults.conf`: one setting per line, `key value` or `key=value` (also
 * `key: value`), blank lines and lines starting with `#` or `!` ignored. Values run to the end of the line and are
 * trimmed; there are no line continuations.
 */

export interface PropertyLine {
  readonly key: string;
  readonly value: string;
  /** 1-based line number. */
  readonly line: number;
}

export interface ParsedProperties {
  readonly settings: readonly PropertyLine[];
  /** Lines that hold a value but no key (`= 5`). */
  readonly malformed: readonly { readonly line: number; readonly text: string }[];
}

export function isCommentOrBlank(text: string): boolean {
  const trimmed = text.trim();
  return trimmed.length === 0 || trimmed.startsWith('#') || trimmed.startsWith('!');
}

/** Splits one setting line into key and value, or undefined when it has no key. */
export function splitSetting(text: string): { readonly key: string; readonly value: string } | undefined {
  const trimmed = text.trim();
  const match = /^([^\s=:]*)\s*(?:[=:]\s*|\s+|$)(.*)$/.exec(trimmed);
  const key = match?.[1] ?? '';
  if (key.length === 0) return undefined;
  return { key, value: (match?.[2] ?? '').trim() };
}

export function parseProperties(text: string): ParsedProperties {
  const settings: PropertyLine[] = [];
  const malformed: { line: number; text: string }[] = [];
  splitLines(text).forEach((lineText, index) => {
    if (isCommentOrBlank(lineText)) return;
    const setting = splitSetting(lineText);
    if (setting === undefined) malformed.push({ line: index + 1, text: lineText.trim() });
    else settings.push({ ...setting, line: index + 1 });
  });
  return { settings, malformed };
}

/** Lines of a text, accepting \n and \r\n; a final newline does not make an extra line. */
export function splitLines(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}
