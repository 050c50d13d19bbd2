// `npm run docs` documented 2 of the 14 entry points: typedoc.json listed the root and
// /middleware only. Every `exports` subpath's source is an entry point, under the name a user
// imports it by (its `@module` tag), so a new subpath cannot be left out of the API reference.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));
const exportsMap = readJson('package.json').exports as Record<string, string | { types: string }>;
/** Each subpath's specifier beside the source of its types (`./dist/x/index.d.ts` → `x/index.ts`). */
const subpaths = Object.entries(exportsMap).flatMap(([key, target]) =>
  typeof target === 'string'
    ? []
    : [
        {
          specifier: `tool-dispatcher${key.slice(1)}`,
          source: target.types.replace(/^\.\/dist\/(.*)\.d\.ts$/, '$1.ts'),
        },
      ],
);

describe('the API reference', () => {
  it('has an entry point for every exports subpath', () => {
    expect(subpaths).toHaveLength(15);
    expect(readJson('typedoc.json').entryPoints).toEqual(subpaths.map(({ source }) => source));
  });

  it.each(subpaths)('names $source after $specifier', ({ specifier, source }) => {
    expect(readFileSync(join(root, source), 'utf8')).toMatch(new RegExp(`^ \\* @module ${specifier}$`, 'm'));
  });
});
