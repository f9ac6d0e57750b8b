export { offerSlots } from './offer.ts';
export { diskBudget } from './eligible-disks.ts';
export { appendLocationPair, soleLocation } from './locations.ts';
export { paddingCount } from './padding.ts';
export { initialPartitionSize, updateEstimatedPartitionSize } from './partition-size.ts';
export type { PartitionSizeBounds, PartitionSizeObservation } from './partition-size.ts';
export type * from './types.ts';
