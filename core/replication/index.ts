export * from './push.ts';
export * from './unavailable-peers.ts';
