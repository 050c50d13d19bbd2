import { describe, expect, it } from 'vitest';
import { toJsonSafe } from '../middleware/index.js';
import { readJsonSafe } from '../src/json-safe.js';

function nested(levels: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < levels; i++) value = { next: value };
  return value;
}

function depthOf(value: unknown): number {
  let depth = 0;
  let at = value;
  while (typeof at === 'object' && at !== null) {
    at = (at as { next?: unknown }).next;
    depth++;
  }
  return depth;
}

const throwing = (message: string) => () => {
  throw new Error(message);
};

describe('toJsonSafe', () => {
  describe('on a value 50 000 levels deep', () => {
    it('stops at maxDepth with a marker, without overflowing the stack', () => {
      const copy = toJsonSafe(nested(50_000));
      expect(depthOf(copy)).toBe(32);
      expect(JSON.stringify(copy).endsWith('"[Too deep]"' + '}'.repeat(32))).toBe(true);
      expect(depthOf(toJsonSafe(nested(50_000), { maxDepth: 3 }))).toBe(3);
    });

    it('leaves the cut level out with unrenderable: omit', () => {
      expect(toJsonSafe(nested(50_000), { maxDepth: 2, unrenderable: 'omit' })).toEqual({ next: {} });
    });

    it('never throws, even with no depth limit', () => {
      expect(() => toJsonSafe(nested(50_000), { maxDepth: Infinity })).not.toThrow();
    });
  });

  describe('on values that throw when read', () => {
    it('marks only the field whose getter throws, and keeps the others', () => {
      const value = { a: 1, b: 2 };
      Object.defineProperty(value, 'bad', { enumerable: true, get: throwing('nope') });
      expect(toJsonSafe(value)).toEqual({ a: 1, b: 2, bad: '[Unreadable: nope]' });
      expect(toJsonSafe(value, { unrenderable: 'omit' })).toEqual({ a: 1, b: 2 });
    });

    it('marks only the array element whose getter throws', () => {
      const list = [1, 2, 3];
      Object.defineProperty(list, 1, { enumerable: true, get: throwing('element') });
      expect(toJsonSafe(list)).toEqual([1, '[Unreadable: element]', 3]);
    });

    it('marks a nested value whose toJSON throws or whose keys cannot be listed', () => {
      const hidden = new Proxy({}, { ownKeys: throwing('keys withheld') });
      expect(toJsonSafe({ ok: true, json: { toJSON: throwing('no JSON') }, hidden })).toEqual({
        ok: true,
        json: '[Unreadable: no JSON]',
        hidden: '[Unreadable: keys withheld]',
      });
    });

    it('marks a value unreadable as a whole, which readJsonSafe reports instead', () => {
      const hidden = new Proxy({}, { ownKeys: throwing('keys withheld') });
      expect(toJsonSafe(hidden)).toBe('[Unreadable: keys withheld]');
      expect(toJsonSafe(hidden, { unrenderable: 'omit' })).toBeUndefined();
      const read = readJsonSafe(hidden);
      expect(read.ok).toBe(false);
      expect(!read.ok && (read.error as Error).message).toBe('keys withheld');
      expect(readJsonSafe({ a: hidden })).toEqual({ ok: true, value: { a: '[Unreadable: keys withheld]' } });
    });

    it('writes the marker on one short line, without stack frames, whatever was thrown', () => {
      const value = {
        get frames(): never {
          throw new Error('broken\n    at secret (/srv/app.js:1:1)\nsecond line');
        },
        get long(): never {
          throw new Error('x'.repeat(500));
        },
        get odd(): never {
          throw { code: 7 };
        },
      };
      const copy = toJsonSafe(value) as Record<string, string>;
      expect(copy['frames']).toBe('[Unreadable: broken second line]');
      expect(copy['long']).toBe(`[Unreadable: ${'x'.repeat(200)}…]`);
      expect(copy['odd']).toBe('[Unreadable: {"code":7}]');
    });
  });
});
