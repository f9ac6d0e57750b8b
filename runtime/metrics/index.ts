/**
 * The metrics of a master or worker process (issue 16 §5): one registry per process, fed by the machine's `metric`
 * effects, the machine's state (projected at every scrape), the driver's observations and the process itself, and
 * rendered under the contract's names for the server's release. See README.md and docs/metrics.md.
 */
export {
  createMetrics,
  parseExtraLabels,
  type MasterMetrics,
  type MasterMetricsOptions,
  type MetricEffect,
  type MetricJson,
  type MetricsOptions,
  type ServerMetrics,
  type WorkerMetrics,
  type WorkerMetricsOptions,
  type WorkerObservations,
} from './registry.ts';
export { statfsDevices, type DiskDirectory } from './devices.ts';
export { METRIC_CATALOGUE, seriesFamilies, specOf, type MetricKind, type MetricSpec } from './catalogue.ts';
export type { DeviceSpace } from './projections.ts';
export {
  envelopeObserver,
  ioObserver,
  partialFrameGivenUp,
  type EnvelopeObserver,
  type ObservedEnvelope,
} from './observers.ts';
