export * from './causes.ts';
export * from './reaction.ts';
export * from './worker-status.ts';
export * from './stage-attempts.ts';
export * from './slow-start.ts';
export * from './fallback.ts';
