// Every failure kind the code can produce is in the README's and docs/error-envelope.md's tables.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

// Reasons an attempt's signal aborts with, which no outcome carries (docs/scale-out.md says so).
const abortReasons = new Set(['lease_lost']);

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder)).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function unionKinds(): string[] {
  const union = /export type DispatchErrorKind =([^;]+);/.exec(read('src/errors.ts'))?.[1] ?? '';
  return [...union.matchAll(/'([a-z_]+)'/g)].map((match) => match[1] as string);
}

function producedKinds(): Set<string> {
  const kinds = new Set<string>();
  for (const file of ['src', 'middleware', 'integrations'].flatMap(sourceFiles)) {
    // Examples in TSDoc build made-up kinds (`rate_limited`): only code counts.
    const code = read(file).replace(/\/\*[\s\S]*?\*\//g, '');
    for (const match of code.matchAll(/new DispatchError\(\s*'([a-z_]+)'/g)) kinds.add(match[1] as string);
  }
  return kinds;
}

function tableKinds(path: string): Set<string> {
  return new Set([...read(path).matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1] as string));
}

describe('the documented failure kinds', () => {
  it('lists every kind DispatchErrorKind names in the README and docs/error-envelope.md', () => {
    const kinds = unionKinds();
    expect(kinds).toContain('idempotency_result_unavailable');
    for (const path of ['README.md', 'docs/error-envelope.md']) {
      const documented = tableKinds(path);
      expect(
        kinds.filter((kind) => !documented.has(kind)),
        path,
      ).toEqual([]);
    }
  });

  it('names in DispatchErrorKind every kind the library builds an envelope with', () => {
    const named = new Set(unionKinds());
    const unnamed = [...producedKinds()].filter((kind) => !named.has(kind) && !abortReasons.has(kind));
    expect(unnamed).toEqual([]);
  });
});
