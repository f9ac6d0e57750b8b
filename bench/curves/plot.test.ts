// The curves' chart is well-formed SVG at a tiny size: one marker per measured point, a ratio label per svc point,
// a failed point marked as failed (bench/curves.bench.ts draws its PNGs from this text).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { bytesTick, chartSvg, countTick } from './plot.ts';

it('draws both sides, the ratios and a failed point', () => {
  const svg = chartSvg({
    title: 'a <title>',
    subtitle: 'tiny',
    xLabel: 'partitions',
    xTick: countTick,
    points: [
      { x: 100, svc: 50, bare: 100 },
      { x: 1000, svc: 20, bare: 80 },
      { x: 10_000, svc: undefined, bare: 60 },
    ],
  });
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.trimEnd().endsWith('</svg>'), 'the document is closed');
  assert.equal(svg.match(/<circle /g)?.length, 5);
  assert.match(svg, />50 %</);
  assert.match(svg, />25 %</);
  assert.match(svg, />failed</);
  assert.match(svg, /a &lt;title&gt;/);
  assert.doesNotMatch(svg, /NaN|undefined|Infinity/);
  assert.equal(bytesTick(1024), '1 KiB');
  assert.equal(bytesTick(2 ** 20), '1 MiB');
  assert.equal(countTick(20_000), '20,000');
});
