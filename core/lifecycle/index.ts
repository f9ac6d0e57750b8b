export * from './applications.ts';
export * from './auto-exclusion.ts';
export * from './host-policy.ts';
export * from './registry.ts';
export * from './registry-snapshot.ts';
export * from './registry-views.ts';
export * from './worker-states.ts';
export * from './dfs-dirs.ts';
export { LayeredMap } from './layered-map.ts';
