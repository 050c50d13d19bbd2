// The CHANGELOG's "Added" bullets name no export a user cannot import: every backticked name that
// the package's source declares with `export` must be reachable from one of package.json's
// subpaths (the root, `tool-dispatcher/middleware`, an integration). Names the package does not
// declare (an SDK's `Client`, an option such as `ttlMs`, a kind) are not claims and are skipped.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(path, 'utf8');
const code = (path: string) =>
  read(path)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

const declaration =
  /export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|abstract\s+class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/g;

/** The names a module exports, following `export … from` and `export *` through the tree. */
function exportsOf(file: string, seen = new Map<string, Set<string>>()): Set<string> {
  const known = seen.get(file);
  if (known !== undefined) return known;
  const names = new Set<string>();
  seen.set(file, names);
  const text = code(file);
  for (const [, list] of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (list as string).split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop();
      if (name) names.add(name);
    }
  }
  for (const [, name] of text.matchAll(declaration)) names.add(name as string);
  for (const [, from] of text.matchAll(/export\s+\*\s+from\s+'([^']+)'/g)) {
    const target = join(dirname(file), (from as string).replace(/\.js$/, '.ts'));
    if (existsSync(target)) for (const name of exportsOf(target, seen)) names.add(name);
  }
  return names;
}

/** Every name some subpath of package.json exports, types included. */
function reachable(): Set<string> {
  const { exports } = JSON.parse(read(join(root, 'package.json'))) as { exports: Record<string, unknown> };
  const names = new Set<string>();
  const seen = new Map<string, Set<string>>();
  for (const subpath of Object.keys(exports)) {
    if (subpath.endsWith('.json')) continue; // data (the manifest, the proxy's JSON Schema), no names
    const entry =
      subpath === '.'
        ? 'index.ts'
        : subpath === './middleware'
          ? 'middleware/index.ts'
          : `integrations/${subpath.slice(2)}/index.ts`;
    for (const name of exportsOf(join(root, entry), seen)) names.add(name);
  }
  return names;
}

/** Every name the package's source declares with `export`, in any module. */
function declared(): Set<string> {
  const names = new Set<string>();
  const walk = (folder: string) => {
    for (const name of readdirSync(join(root, folder))) {
      const path = join(root, folder, name);
      if (statSync(path).isDirectory()) walk(join(folder, name));
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts'))
        for (const [, found] of code(path).matchAll(declaration)) names.add(found as string);
    }
  };
  for (const folder of ['src', 'middleware', 'integrations']) walk(folder);
  return names;
}

/** The backticked names of the "### Added" bullets: `name`, `name(…)` or `name.member`. */
function addedNames(changelog: string): Map<string, string> {
  const start = changelog.indexOf('### Added');
  const added = changelog.slice(start, changelog.indexOf('\n### ', start + 1));
  const names = new Map<string, string>();
  for (const [, span] of added.matchAll(/`([^`\n]+)`/g)) {
    const name = /^([A-Za-z_$][\w$]*)(?:$|\(|\.[A-Za-z_$])/.exec(span as string)?.[1];
    if (name !== undefined) names.set(name, span as string);
  }
  return names;
}

describe('the CHANGELOG', () => {
  it('reads the subpaths’ exports and the Added section', () => {
    const exported = reachable();
    expect(exported).toContain('createDispatcher');
    expect(exported).toContain('sleep');
    expect(exported).toContain('importMcpTools');
    expect(exported).toContain('DispatchOptions');
    expect(addedNames(read(join(root, 'CHANGELOG.md'))).get('OutcomeUnknownError')).toBe(
      'OutcomeUnknownError',
    );
  });

  it('lists under Added no name of ours that no subpath exports', () => {
    const exported = reachable();
    const ours = declared();
    const unexported = [...addedNames(read(join(root, 'CHANGELOG.md')))]
      .filter(([name]) => ours.has(name) && !exported.has(name))
      .map(([name, span]) => `${name} (\`${span}\`)`);
    expect(unexported).toEqual([]);
  });
});
