// Instruments a process the data-plane benchmark measures (a worker, a bare sink, a client), loaded with `--import`
// (through NODE_OPTIONS for the workers LocalCluster spawns, so that runtime/ needs no hook). Plain JavaScript: it
// runs before tsx is registered. Without its environment variables it does nothing.
//
// SVC_BENCH_PROBE_DIR: samples perf_hooks.monitorEventLoopDelay; on each SIGUSR2 it writes what the histogram holds
// since the previous SIGUSR2 to <dir>/<pid>.json (with a sequence number) and starts afresh. The benchmark sends one
// SIGUSR2 when a measurement starts and one when it ends. The histogram records the whole interval between the
// sampling timer's runs (at least `resolution`): the delay written is that interval minus the resolution, so an
// idle loop shows about 0. It also counts garbage collections (count and milliseconds by kind) in the interval.
//
// SVC_BENCH_CPU_PROF_DIR: runs V8's sampling profiler (1 ms interval) from here to the process's exit, then writes
// the profile as <dir>/CPU.probe.0.<pid>.0.cpuprofile, the format of `node --cpu-prof` (which Node.js refuses in
// NODE_OPTIONS). The inspector session is on this thread, so its replies arrive synchronously, in the exit handler.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const probeDir = process.env.SVC_BENCH_PROBE_DIR;
if (probeDir !== undefined && probeDir !== '') {
  const resolution = 10;
  const histogram = monitorEventLoopDelay({ resolution });
  histogram.enable();
  // Garbage collections in the interval: count and milliseconds, by kind (PerformanceObserver 'gc' entries).
  const kinds = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  let gc = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = kinds[entry.detail?.kind] ?? 'other';
      const total = (gc[kind] ??= { count: 0, ms: 0 });
      total.count += 1;
      total.ms += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  let seq = 0;
  const ms = (ns) => Math.max(0, ns / 1e6 - resolution);
  process.on('SIGUSR2', () => {
    seq += 1;
    const summary = {
      seq,
      pid: process.pid,
      resolutionMs: resolution,
      count: histogram.count,
      p50: ms(histogram.percentile(50)),
      p90: ms(histogram.percentile(90)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      mean: ms(histogram.mean),
      gc,
    };
    writeFileSync(path.join(probeDir, `${process.pid}.json`), JSON.stringify(summary));
    histogram.reset();
    gc = {};
  });
}

const profileDir = process.env.SVC_BENCH_CPU_PROF_DIR;
if (profileDir !== undefined && profileDir !== '') {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (error === null && result !== undefined) {
        const file = path.join(profileDir, `CPU.probe.0.${process.pid}.0.cpuprofile`);
        writeFileSync(file, JSON.stringify(result.profile));
      }
    });
  });
}

// SVC_BENCH_HEAP_PROF_DIR: runs V8's sampling heap profiler from here to the process's exit, counting objects the
// collector has already freed too (what a run allocates, not what it keeps), and writes the profile with the
// process's command line as <dir>/HEAP.<pid>.json (./heap-profile.ts summarises it). The whole life of the process:
// warm-up and measurement alike. With SVC_BENCH_HEAP_PROF_PROMOTED=1 the objects a scavenge freed are left out: what
// remains is what the collector copied out of the young generation (promoted, or alive at the end).
const heapDir = process.env.SVC_BENCH_HEAP_PROF_DIR;
if (heapDir !== undefined && heapDir !== '') {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.SVC_BENCH_HEAP_PROF_PROMOTED !== '1',
  });
  process.on('exit', () => {
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error === null && result !== undefined) {
        const file = path.join(heapDir, `HEAP.${process.pid}.json`);
        writeFileSync(file, JSON.stringify({ argv: process.argv.slice(1), profile: result.profile }));
      }
    });
  });
}
