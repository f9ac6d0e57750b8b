import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { GaugeSample } from './projections.ts';

/**
 * The Node.js process's own gauges: event-loop delay (perf_hooks.monitorEventLoopDelay, sampled every 10 ms) and
 * memory. The delay percentiles cover the time since the previous collection: each collection reads, then resets,
 * the histogram, so that a stall shows on the next scrape and then clears.
 */
export class ProcessGauges {
  private readonly delay: IntervalHistogram;

  constructor(resolutionMs = 10) {
    this.delay = monitorEventLoopDelay({ resolution: resolutionMs });
    this.delay.enable();
  }

  collect(): GaugeSample[] {
    const ms = (ns: number): number => (Number.isFinite(ns) && this.delay.count > 0 ? ns / 1e6 : 0);
    const memory = process.memoryUsage();
    const gauges: GaugeSample[] = [
      { name: 'ProcessEventLoopDelayP50Ms', value: ms(this.delay.percentile(50)) },
      { name: 'ProcessEventLoopDelayP99Ms', value: ms(this.delay.percentile(99)) },
      { name: 'ProcessEventLoopDelayMaxMs', value: ms(this.delay.max) },
      { name: 'ProcessResidentMemoryBytes', value: memory.rss },
      { name: 'ProcessHeapUsedBytes', value: memory.heapUsed },
      { name: 'ProcessHeapTotalBytes', value: memory.heapTotal },
      { name: 'ProcessExternalMemoryBytes', value: memory.external },
    ];
    this.delay.reset();
    return gauges;
  }

  close(): void {
    this.delay.disable();
  }
}
