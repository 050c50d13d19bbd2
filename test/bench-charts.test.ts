// bench/charts.ts draws the headline ratios docs/benchmarks.md embeds: one bar per ratio, its
// interquartile whisker, a dashed target line, red where the target is missed.

import { describe, expect, it } from 'vitest';
import { chartSvg, meetsTarget } from '../bench/charts.js';

describe('chartSvg', () => {
  it('draws a bar, a whisker and a target per ratio, coloured by the target', () => {
    const svg = chartSvg({
      file: 'x.svg',
      title: 'Per dispatch <vs> "cockatiel"',
      scale: 'linear',
      bars: [
        { label: 'met', median: 0.07, q1: 0.06, q3: 0.08, target: { value: 0.08, kind: 'max' } },
        { label: 'missed', median: 0.27, q1: 0.24, q3: 0.29, target: { value: 0.35, kind: 'min' } },
        { label: 'reported', median: 0.5, q1: 0.4, q3: 0.6 },
      ],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('Per dispatch &#60;vs&#62; &#34;cockatiel&#34;');
    expect(svg.match(/<rect x=/g)).toHaveLength(3);
    expect(svg.match(/stroke-dasharray/g)).toHaveLength(2);
    expect(svg).toContain('fill="#2e7d32"');
    expect(svg).toContain('fill="#c62828"');
    expect(svg).toContain('target ≥ 0.35×');
  });

  it('reads a target as at most or at least', () => {
    expect(
      meetsTarget({ label: 'a', median: 1.2, q1: 1, q3: 1.3, target: { value: 1.25, kind: 'max' } }),
    ).toBe(true);
    expect(
      meetsTarget({ label: 'b', median: 0.27, q1: 0.2, q3: 0.3, target: { value: 0.35, kind: 'min' } }),
    ).toBe(false);
    expect(meetsTarget({ label: 'c', median: 1, q1: 1, q3: 1 })).toBeUndefined();
  });

  it('refuses a chart with no bars', () => {
    expect(() => chartSvg({ file: 'x.svg', title: 'empty', scale: 'log', bars: [] })).toThrow(TypeError);
  });
});
