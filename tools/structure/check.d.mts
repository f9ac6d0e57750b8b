// Types of check.mjs for the TypeScript tests that call it.
export interface StructureProblem {
  readonly rule: string;
  readonly message: string;
}

export function checkStructure(options?: {
  readonly files?: readonly string[];
  readonly fixtures?: boolean;
}): Promise<StructureProblem[]>;
