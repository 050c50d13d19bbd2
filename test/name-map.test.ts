// createNameMap: the reversible, checked map between registry names and provider wire names.

import { describe, expect, it } from 'vitest';
import { createNameMap } from '../src/name-map.js';

describe('createNameMap', () => {
  it('maps dotted names to double underscores and back', () => {
    const names = createNameMap(['search.web', 'db.get_user', 'ping']);
    expect(names.wireName('search.web')).toBe('search__web');
    expect(names.wireName('db.get_user')).toBe('db__get_user');
    expect(names.wireName('ping')).toBe('ping');
    expect(names.toolName('search__web')).toBe('search.web');
    expect(names.toolName('db__get_user')).toBe('db.get_user');
    expect([...names.entries()]).toEqual([
      ['search.web', 'search__web'],
      ['db.get_user', 'db__get_user'],
      ['ping', 'ping'],
    ]);
  });

  it('returns an unknown wire name unchanged, and has() tells its own wire names from others', () => {
    const names = createNameMap(['search.web']);
    expect(names.toolName('ghost')).toBe('ghost');
    expect(names.toolName('__proto__')).toBe('__proto__');
    expect(names.has('search__web')).toBe(true);
    // A registry name is not a wire name: a host must not dispatch it.
    expect(names.has('search.web')).toBe(false);
    expect(names.has('ghost')).toBe(false);
    expect(names.has('__proto__')).toBe(false);
  });

  it('throws a TypeError for a tool name it was not built with', () => {
    expect(() => createNameMap(['a']).wireName('b')).toThrow(TypeError);
  });

  it('throws a TypeError naming both tools when two map to one wire name', () => {
    expect(() => createNameMap(['a.b', 'a__b'])).toThrow(
      /Tools "a.b" and "a__b" both map to the wire name "a__b"/,
    );
  });

  it('throws a TypeError naming the tool when a wire name is too long', () => {
    const long = `a.${'x'.repeat(62)}`;
    expect(() => createNameMap([long])).toThrow(new RegExp(`Tool "${long}" .* 1 to 64`));
    expect(() => createNameMap([long], { maxLength: 128 })).not.toThrow();
  });

  it('throws a TypeError naming the tool when a wire name breaks the pattern', () => {
    expect(() => createNameMap(['a.b'], { encode: (name) => name })).toThrow(
      /Tool "a.b" maps to the wire name "a.b", which does not match/,
    );
    expect(() => createNameMap(['a.b'], { encode: () => '' })).toThrow(/Tool "a.b"/);
  });

  it('uses a custom encode and pattern', () => {
    const names = createNameMap(['search.web'], {
      encode: (name) => name.replaceAll('.', '-'),
      pattern: /^[a-z-]+$/,
    });
    expect(names.wireName('search.web')).toBe('search-web');
    expect(names.toolName('search-web')).toBe('search.web');
  });

  it('ignores the g and y flags of a pattern, so every name is checked alike', () => {
    const names = createNameMap(['a', 'b', 'c'], { pattern: /^[a-z]+$/g });
    expect([...names.entries()].map(([, wire]) => wire)).toEqual(['a', 'b', 'c']);
  });

  it('takes a name given twice once', () => {
    expect([...createNameMap(['a', 'a']).entries()]).toEqual([['a', 'a']]);
  });

  it('validates its arguments with TypeErrors naming the option', () => {
    expect(() => createNameMap(null as never)).toThrow(/names/);
    expect(() => createNameMap([1 as never])).toThrow(/names must be strings/);
    expect(() => createNameMap([], { pattern: 'x' as never })).toThrow(/pattern/);
    expect(() => createNameMap([], { maxLength: 0 })).toThrow(/maxLength/);
    expect(() => createNameMap([], { encode: 1 as never })).toThrow(/encode/);
    expect(() => createNameMap(['a'], { encode: (() => 1) as never })).toThrow(/encode must return a string/);
    expect(() =>
      createNameMap(['a'], {
        encode: () => {
          throw new Error('boom');
        },
      }),
    ).toThrow(/encode threw for tool "a": boom/);
  });
});
