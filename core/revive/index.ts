export * from './allocate.ts';
export * from './book.ts';
export * from './candidates.ts';
