export * from './ids.ts';
export * from './partition.ts';
export * from './status.ts';
export * from './storage.ts';
export * from './worker.ts';
