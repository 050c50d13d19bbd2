// The house rules, checked: who may import whom (see docs/concepts.md and STYLE.md).

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function sourceFiles(folder: string): string[] {
  const at = join(root, folder);
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) found.push(path);
    }
  };
  walk(at);
  return found;
}

const importPattern =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'"`;]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every module specifier `file` imports or re-exports, static or dynamic. */
function specifiersOf(file: string): string[] {
  // Comments may show imports (TSDoc examples); only code counts.
  const text = readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const match of text.matchAll(importPattern)) found.push((match[1] ?? match[2]) as string);
  return found;
}

/** Where a relative specifier points, relative to the project root with `/` separators. */
function target(file: string, specifier: string): string {
  return relative(root, resolve(dirname(file), specifier))
    .split(sep)
    .join('/');
}

const isRelative = (specifier: string) => specifier.startsWith('.');
const isBuiltin = (specifier: string) => specifier.startsWith('node:');

interface Violation {
  file: string;
  specifier: string;
}

function violations(folder: string, breaks: (file: string, specifier: string) => boolean): Violation[] {
  const found: Violation[] = [];
  for (const file of sourceFiles(folder)) {
    for (const specifier of specifiersOf(file)) {
      if (breaks(file, specifier)) found.push({ file: relative(root, file), specifier });
    }
  }
  return found;
}

describe('the import rules', () => {
  it('reads the specifiers it checks', () => {
    expect(new Set(specifiersOf(join(root, 'index.ts')))).toEqual(
      new Set(['./src/index.js', './middleware/index.js']),
    );
    expect(sourceFiles('src').length).toBeGreaterThan(10);
  });

  it('keeps src/ to src/ and zod', () => {
    expect(
      violations('src', (file, specifier) =>
        isRelative(specifier)
          ? !target(file, specifier).startsWith('src/')
          : !isBuiltin(specifier) && specifier !== 'zod',
      ),
    ).toEqual([]);
  });

  it('keeps middleware/ to src/, middleware/ and no third-party package', () => {
    expect(
      violations('middleware', (file, specifier) => {
        if (!isRelative(specifier)) return !isBuiltin(specifier);
        const to = target(file, specifier);
        return !to.startsWith('src/') && !to.startsWith('middleware/');
      }),
    ).toEqual([]);
  });

  it('lets nothing in the package import an integration', () => {
    const intoIntegrations = (file: string, specifier: string) =>
      isRelative(specifier) && target(file, specifier).startsWith('integrations/');
    expect([...violations('src', intoIntegrations), ...violations('middleware', intoIntegrations)]).toEqual(
      [],
    );
    expect(
      specifiersOf(join(root, 'index.ts')).filter((specifier) => specifier.includes('integrations')),
    ).toEqual([]);
  });

  it('lets an integration use only the public faces and its own folder', () => {
    const publicFaces = new Set(['index.js', 'src/index.js', 'src/stores.js', 'middleware/index.js']);
    // The one module the integrations share: the check that names a missing peer.
    const shared = 'integrations/peers.js';
    // The durable-engine adapters share the engine-neutral part (the verdict, the step's options).
    const engineAdapters = new Set(['integrations/restate', 'integrations/dbos']);
    // The two provider toolkits share their option checks.
    const providerToolkits = new Set(['integrations/openai', 'integrations/anthropic']);
    // `mcp-proxy --redis-url` builds its fleet stores with tool-dispatcher/redis's public face.
    const fleetWiring = { from: 'integrations/mcp/fleet.ts', to: 'integrations/redis/index.js' };
    expect(
      violations('integrations', (file, specifier) => {
        if (!isRelative(specifier)) return false;
        const to = target(file, specifier);
        const own = relative(root, file).split(sep).slice(0, 2).join('/');
        if (engineAdapters.has(own) && to.startsWith('integrations/durable/')) return false;
        if (providerToolkits.has(own) && to.startsWith('integrations/provider/')) return false;
        const from = relative(root, file).split(sep).join('/');
        if (from === fleetWiring.from && to === fleetWiring.to) return false;
        return !publicFaces.has(to) && to !== shared && !to.startsWith(`${own}/`);
      }),
    ).toEqual([]);
  });

  it('lets a layer use the core only through its public modules, the kit and trusted()', () => {
    // The modules src/index.ts re-exports are the core's public face.
    const publicCore = new Set(
      specifiersOf(join(root, 'src/index.ts')).map((specifier) =>
        target(join(root, 'src/index.ts'), specifier),
      ),
    );
    publicCore.add('src/internal/trusted.js');
    expect(publicCore.has('src/types.js')).toBe(true);
    expect(
      violations('middleware', (file, specifier) => {
        if (!isRelative(specifier)) return false;
        const to = target(file, specifier);
        if (!to.startsWith('src/')) return false;
        const from = relative(root, file).split(sep).join('/');
        // The kit is the one door from the layers into src/internal/, and it publishes the attempt
        // step's two helpers for handlers that relay a call (the MCP client).
        if (from === 'middleware/kit.ts') {
          return !(to.startsWith('src/internal/') || publicCore.has(to) || to === 'src/attempt.js');
        }
        return !publicCore.has(to);
      }),
    ).toEqual([]);
  });

  it('names no layer anywhere in src/', () => {
    const layers = [
      'errorMapping',
      'toolLookup',
      'schemaValidation',
      'budgetGuard',
      'idempotency',
      'concurrencyLimit',
      'circuitBreaker',
      'retry',
      'timeout',
      'logging',
      'defaultStack',
      'innermostLayer',
    ];
    const named: string[] = [];
    for (const file of sourceFiles('src')) {
      // Code only: comments, string literals (messages may tell a user which layer to add) and
      // regular expressions (a pattern may match a word such as "retry").
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '')
        .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''")
        .replace(
          /(?<=[=(,:!&|?;{}]\s*|return\s+)\/(?:[^/\\\n[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+\/[a-z]*/g,
          '/x/',
        );
      for (const name of layers) {
        if (new RegExp(`\\b${name}\\b`).test(code)) named.push(`${relative(root, file)}: ${name}`);
      }
    }
    expect(named).toEqual([]);
  });

  it('keeps in src/internal/ only what several modules share (a one-user helper lives beside its user)', () => {
    const users = new Map<string, Set<string>>();
    for (const folder of ['src', 'middleware', 'integrations']) {
      for (const file of sourceFiles(folder)) {
        for (const specifier of specifiersOf(file)) {
          if (!isRelative(specifier)) continue;
          const to = target(file, specifier);
          if (!to.startsWith('src/internal/')) continue;
          const seen = users.get(to) ?? new Set<string>();
          seen.add(relative(root, file).split(sep).join('/'));
          users.set(to, seen);
        }
      }
    }
    const internal = sourceFiles('src/internal').map((file) =>
      relative(root, file).split(sep).join('/').replace(/\.ts$/, '.js'),
    );
    const loners = internal.filter((module) => {
      const by = [...(users.get(module) ?? [])];
      // A helper of one other internal module already lives beside its user.
      return by.length === 0 || (by.length === 1 && !by[0]!.startsWith('src/internal/'));
    });
    expect(loners).toEqual([]);
  });
});
