// Types of folders.mjs for the TypeScript tests that read the rules.
export const topFolders: readonly string[];
export const dividedFolders: readonly string[];
export const namedSubfolders: readonly string[];
export const mayImport: Readonly<Record<string, readonly string[]>>;
export const testOnlyPatterns: readonly string[];
export const shippedFolders: readonly string[];
export function isTestOnly(path: string): boolean;
export function isShipped(path: string): boolean;
export function folderOf(path: string): string;
export function folderMayImport(from: string, to: string): boolean;
export function topMayImport(top: string): string[];
