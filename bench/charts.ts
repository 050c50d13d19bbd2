/**
 * Small SVG bar charts of the benchmark's headline ratios, for docs/benchmarks.md: one
 * horizontal bar per ratio (its median), a whisker for its interquartile range and a dashed line
 * at its target, green where the target is met and red where it is not. No dependency: the SVG
 * is written as text, so `--render` redraws it from bench/results.json alone.
 * @module
 */

/** One ratio to draw. */
export interface ChartBar {
  /** The row's label, e.g. "default stack / cockatiel stack". */
  readonly label: string;
  /** The median of the per-round ratios. */
  readonly median: number;
  /** The first quartile of the per-round ratios. */
  readonly q1: number;
  /** The third quartile of the per-round ratios. */
  readonly q3: number;
  /** The target and which side of it is good: `max` for "at most", `min` for "at least". */
  readonly target?: { readonly value: number; readonly kind: 'max' | 'min' };
}

/** A chart: its file name under docs/charts/, its title and its bars. */
export interface Chart {
  /** The file name, e.g. "per-dispatch.svg". */
  readonly file: string;
  /** The title drawn above the bars, also the image's alt text. */
  readonly title: string;
  /** `log` for ratios an order of magnitude apart (a log10 axis); `linear` otherwise. */
  readonly scale: 'linear' | 'log';
  /** The line under the bars saying what they are. @default per-round medians, their IQR and the target */
  readonly legend?: string;
  readonly bars: readonly ChartBar[];
}

const width = 840;
const labelWidth = 330;
const plotLeft = labelWidth + 10;
const plotWidth = width - plotLeft - 180;
const rowHeight = 34;
const top = 44;
const colours = { met: '#2e7d32', missed: '#c62828', none: '#546e7a', axis: '#9e9e9e', text: '#212121' };

/** Whether `bar` meets its target (`undefined` when it has none). */
export function meetsTarget(bar: ChartBar): boolean | undefined {
  if (bar.target === undefined) return undefined;
  return bar.target.kind === 'max' ? bar.median <= bar.target.value : bar.median >= bar.target.value;
}

/** The chart as an SVG document (UTF-8 text, no external references). */
export function chartSvg(chart: Chart): string {
  if (chart.bars.length === 0) throw new TypeError(`chartSvg(): the chart "${chart.title}" has no bars`);
  const values = chart.bars.flatMap((bar) => [bar.q1, bar.q3, bar.median, bar.target?.value ?? bar.median]);
  const axis = chart.scale === 'log' ? logAxis(values) : linearAxis(values);
  const height = top + chart.bars.length * rowHeight + 46;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="13">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="24" font-size="15" font-weight="600" fill="${colours.text}">${escapeXml(chart.title)}</text>`,
  ];
  const plotBottom = top + chart.bars.length * rowHeight;
  for (const tick of axis.ticks) {
    const x = round(plotLeft + axis.position(tick) * plotWidth);
    parts.push(
      `<line x1="${x}" y1="${top - 6}" x2="${x}" y2="${plotBottom}" stroke="#eeeeee"/>`,
      `<text x="${x}" y="${plotBottom + 16}" text-anchor="middle" fill="${colours.axis}">${formatRatio(tick)}×</text>`,
    );
  }
  chart.bars.forEach((bar, index) => {
    parts.push(...barSvg(bar, top + index * rowHeight, axis.position));
  });
  parts.push(
    `<text x="12" y="${height - 10}" font-size="11" fill="${colours.axis}">${escapeXml(chart.legend ?? 'bar: median of per-round ratios · whisker: interquartile range · dashed: target')}${chart.scale === 'log' ? ' · log scale' : ''}</text>`,
    '</svg>',
    '',
  );
  return parts.join('\n');
}

function barSvg(bar: ChartBar, y: number, position: (value: number) => number): string[] {
  const met = meetsTarget(bar);
  const colour = met === undefined ? colours.none : met ? colours.met : colours.missed;
  const x0 = plotLeft;
  const xMedian = round(plotLeft + position(bar.median) * plotWidth);
  const xQ1 = round(plotLeft + position(bar.q1) * plotWidth);
  const xQ3 = round(plotLeft + position(bar.q3) * plotWidth);
  const middle = y + rowHeight / 2;
  const parts = [
    `<text x="${labelWidth}" y="${middle + 4}" text-anchor="end" fill="${colours.text}">${escapeXml(bar.label)}</text>`,
    `<rect x="${x0}" y="${middle - 8}" width="${Math.max(1, xMedian - x0)}" height="16" fill="${colour}" fill-opacity="0.85"/>`,
    `<line x1="${xQ1}" y1="${middle}" x2="${xQ3}" y2="${middle}" stroke="${colours.text}" stroke-width="1.5"/>`,
    `<line x1="${xQ1}" y1="${middle - 5}" x2="${xQ1}" y2="${middle + 5}" stroke="${colours.text}" stroke-width="1.5"/>`,
    `<line x1="${xQ3}" y1="${middle - 5}" x2="${xQ3}" y2="${middle + 5}" stroke="${colours.text}" stroke-width="1.5"/>`,
  ];
  let labelX = Math.max(xMedian, xQ3) + 6;
  let targetText = '';
  if (bar.target !== undefined) {
    const xTarget = round(plotLeft + position(bar.target.value) * plotWidth);
    const sign = bar.target.kind === 'max' ? '≤' : '≥';
    targetText = `<tspan dx="8" font-weight="400" fill="${colours.axis}">target ${sign} ${formatRatio(bar.target.value)}×</tspan>`;
    labelX = Math.max(labelX, xTarget + 6);
    parts.push(
      `<line x1="${xTarget}" y1="${middle - 13}" x2="${xTarget}" y2="${middle + 13}" stroke="${colours.text}" stroke-width="1.5" stroke-dasharray="3 2"/>`,
    );
  }
  parts.push(
    `<text x="${labelX}" y="${middle + 4}" fill="${colour}" font-weight="600">${formatRatio(bar.median)}×${targetText}</text>`,
  );
  return parts;
}

interface Axis {
  readonly ticks: readonly number[];
  /** Where `value` sits on the plot, 0 (left) to 1 (right). */
  readonly position: (value: number) => number;
}

// 0 to a little past the largest value, ticks at a 1-2-5 step.
function linearAxis(values: readonly number[]): Axis {
  const largest = Math.max(...values.filter(Number.isFinite), Number.MIN_VALUE);
  const step = niceStep(largest / 4);
  const end = Math.ceil((largest * 1.05) / step) * step;
  const ticks: number[] = [];
  for (let tick = 0; tick <= end + step / 2; tick += step) ticks.push(Number(tick.toPrecision(12)));
  return { ticks, position: (value) => clamp(value / end) };
}

// Whole powers of ten around the values.
function logAxis(values: readonly number[]): Axis {
  const positive = values.filter((value) => Number.isFinite(value) && value > 0);
  const low = Math.floor(Math.log10(Math.min(...positive)));
  const high = Math.ceil(Math.log10(Math.max(...positive)));
  const span = Math.max(1, high - low);
  const ticks: number[] = [];
  for (let power = low; power <= low + span; power += 1) ticks.push(10 ** power);
  return { ticks, position: (value) => (value > 0 ? clamp((Math.log10(value) - low) / span) : 0) };
}

function niceStep(rough: number): number {
  const power = 10 ** Math.floor(Math.log10(rough));
  const scaled = rough / power;
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power;
}

function clamp(fraction: number): number {
  return Math.min(1, Math.max(0, fraction));
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** A ratio with three significant digits, as the page's tables print it. */
function formatRatio(value: number): string {
  if (value >= 100) return value.toFixed(0);
  return Number(value.toPrecision(3)).toString();
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
