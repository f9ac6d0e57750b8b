export * from './types.ts';
export * from './admission.ts';
export * from './accepting.ts';
export * from './connecting.ts';
export * from './messages.ts';
export * from './secret-cache.ts';
