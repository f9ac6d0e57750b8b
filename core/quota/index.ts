export * from './consumption.ts';
export * from './limits.ts';
export * from './status.ts';
