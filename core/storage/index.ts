export * from './eviction.ts';
export * from './policy.ts';
export * from './split.ts';
export * from './tier-choice.ts';
export * from './back-pressure.ts';
export * from './congestion.ts';
export * from './disk-space.ts';
