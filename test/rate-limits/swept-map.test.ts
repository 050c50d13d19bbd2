// The memory rate and window stores' shell: stale entries go once the map has doubled, live ones stay.

import { describe, expect, it } from 'vitest';
import { SweptMap } from '../../middleware/swept-map.js';

describe('SweptMap', () => {
  it('drops the stale entries once it reaches 1 024, keeping live ones and the one just added', () => {
    const map = new SweptMap<{ live: boolean }>();
    for (let i = 0; i < 1_023; i++) map.add(`k${i}`, { live: i % 2 === 0 }, (held) => !held.live);
    expect(map.size).toBe(1_023);
    const last = { live: false };
    map.add('last', last, (held) => !held.live);
    expect(map.size).toBe(513);
    expect(map.get('last')).toBe(last);
    expect(map.get('k0')).toEqual({ live: true });
    expect(map.get('k1')).toBeUndefined();
  });

  it('sweeps again only once it has doubled', () => {
    const map = new SweptMap<number>();
    for (let i = 0; i < 1_024; i++) map.add(`k${i}`, i, () => false);
    // Nothing was stale: the next sweep waits for 2 048 entries.
    for (let i = 1_024; i < 2_047; i++) map.add(`k${i}`, i, () => true);
    expect(map.size).toBe(2_047);
    map.add('k2047', 2_047, (held) => held >= 1_024);
    expect(map.size).toBe(1_025);
  });
});
