/**
 * A line chart as SVG text: throughput against a quantity on a logarithmic axis, svc and the bare baseline side by
 * side, each svc point labelled with its share of the bare one. Pure (no I/O), so that the benchmark rasterises it
 * (or keeps the SVG) and a test can check its output.
 */

export interface CurvePoint {
  /** The quantity on the x axis (partitions, batch bytes). */
  readonly x: number;
  /** MiB/s; undefined when that side failed to produce the point. */
  readonly svc: number | undefined;
  readonly bare: number | undefined;
}

export interface Chart {
  readonly title: string;
  readonly subtitle: string;
  readonly xLabel: string;
  /** How an x value is written on its axis (1k, 64 KiB). */
  readonly xTick: (x: number) => string;
  readonly points: readonly CurvePoint[];
}

const WIDTH = 800;
const HEIGHT = 500;
const MARGIN = { left: 80, right: 30, top: 70, bottom: 95 };
const SVC_COLOUR = '#1f5fbf';
const BARE_COLOUR = '#8a8a8a';

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A round step for a linear axis reaching `max` in about 5 ticks. */
function step(max: number): number {
  const raw = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 2.5, 5, 10]) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

export function chartSvg(chart: Chart): string {
  const xs = chart.points.map((p) => p.x);
  const ys = chart.points.flatMap((p) => [p.svc, p.bare]).filter((y): y is number => y !== undefined);
  const yStep = step(Math.max(1, ...ys) * 1.1);
  const yMax = Math.ceil((Math.max(1, ...ys) * 1.1) / yStep) * yStep;
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const logSpan = Math.log(xMax) - Math.log(xMin) || 1;
  const px = (x: number) => MARGIN.left + ((Math.log(x) - Math.log(xMin)) / logSpan) * plotW;
  const py = (y: number) => MARGIN.top + plotH - (y / yMax) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" ` +
      `font-family="DejaVu Sans, Arial, sans-serif">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="28" font-size="18" text-anchor="middle">${escape(chart.title)}</text>`,
    `<text x="${WIDTH / 2}" y="50" font-size="12" text-anchor="middle" fill="#555">${escape(chart.subtitle)}</text>`,
  ];
  for (let y = 0; y <= yMax + 1e-9; y += yStep) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${py(y)}" y2="${py(y)}" stroke="#e4e4e4"/>`,
      `<text x="${MARGIN.left - 8}" y="${py(y) + 4}" font-size="12" text-anchor="end">${Number(y.toFixed(2))}</text>`,
    );
  }
  for (const x of xs) {
    parts.push(
      `<line x1="${px(x)}" x2="${px(x)}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#f0f0f0"/>`,
      `<text x="${px(x)}" y="${MARGIN.top + plotH + 20}" font-size="12" text-anchor="middle">${escape(chart.xTick(x))}</text>`,
    );
  }
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 44}" font-size="13" text-anchor="middle">${escape(chart.xLabel)}</text>`,
    `<text transform="translate(22 ${MARGIN.top + plotH / 2}) rotate(-90)" font-size="13" text-anchor="middle">` +
      'throughput, MiB/s</text>',
  );
  const line = (pick: (p: CurvePoint) => number | undefined, colour: string, dash: string): void => {
    const drawn = chart.points.filter((p) => pick(p) !== undefined);
    if (drawn.length > 1) {
      const path = drawn.map((p) => `${px(p.x).toFixed(1)},${py(pick(p)!).toFixed(1)}`).join(' ');
      parts.push(`<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2.5"${dash}/>`);
    }
    for (const p of drawn) {
      parts.push(`<circle cx="${px(p.x)}" cy="${py(pick(p)!)}" r="4" fill="${colour}"/>`);
    }
  };
  line((p) => p.bare, BARE_COLOUR, ' stroke-dasharray="6 4"');
  line((p) => p.svc, SVC_COLOUR, '');
  for (const p of chart.points) {
    if (p.svc === undefined) {
      parts.push(
        `<text x="${px(p.x)}" y="${MARGIN.top + plotH - 8}" font-size="12" text-anchor="middle" fill="#b00">failed</text>`,
      );
    } else if (p.bare !== undefined && p.bare > 0) {
      parts.push(
        `<text x="${px(p.x)}" y="${py(p.svc) - 10}" font-size="11" text-anchor="middle" fill="${SVC_COLOUR}">` +
          `${((p.svc / p.bare) * 100).toFixed(0)} %</text>`,
      );
    }
  }
  // Below the axis title, outside the plot, where no point or label can fall.
  const legendY = HEIGHT - 14;
  const legendX = MARGIN.left + plotW / 2 - 230;
  parts.push(
    `<line x1="${legendX}" x2="${legendX + 30}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${SVC_COLOUR}" stroke-width="2.5"/>`,
    `<text x="${legendX + 38}" y="${legendY}" font-size="12">svc (its % of the bare sink above each point)</text>`,
    `<line x1="${legendX + 330}" x2="${legendX + 360}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${BARE_COLOUR}" stroke-width="2.5" stroke-dasharray="6 4"/>`,
    `<text x="${legendX + 368}" y="${legendY}" font-size="12">bare sink, same stream</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}

/** 1024 → "1 KiB", 1048576 → "1 MiB". */
export function bytesTick(bytes: number): string {
  if (bytes >= 2 ** 20 && bytes % 2 ** 20 === 0) return `${bytes / 2 ** 20} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} B`;
}

/** 20000 → "20,000". */
export function countTick(count: number): string {
  return count.toLocaleString('en-US');
}
