// require('tool-dispatcher') threw on purpose (a CommonJS shim behind the `require` condition), yet
// Node 20.19+ and 22.12+ load ES modules through require(). Without the shim the root and every
// subpath whose module graph has no top-level await load through require() with the same exports
// as import; the subpaths whose entry awaits its peers (to name a missing one in one line) are
// refused by Node itself with ERR_REQUIRE_ASYNC_MODULE, never ERR_PACKAGE_PATH_NOT_EXPORTED.
// The suite runs on Node 20 and again on Node 24 (npm run test:node24), so both lines are covered.

import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
};
const subpaths = Object.keys(packageJson.exports)
  // JSON files (the manifest, mcp-proxy.schema.json) are data, not modules.
  .filter((key) => !key.endsWith('.json'))
  .map((key) => `tool-dispatcher${key.slice(1)}`);
/** The entries that await their peers at the top level (integrations/<name>/entry.ts). */
const awaitingEntries = new Set(
  ['ai-sdk', 'langchain', 'openai-agents', 'mcp', 'otel', 'restate', 'dbos'].map(
    (name) => `tool-dispatcher/${name}`,
  ),
);

let packageDir = '';

/** Every .ts source the build compiles, transpiled one file at a time into `<dir>/dist`. */
function transpileInto(dir: string): void {
  const sources = ['index.ts', 'src', 'middleware', 'integrations'].flatMap((entry) =>
    entry.endsWith('.ts')
      ? [entry]
      : readdirSync(join(root, entry), { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
          .map((file) => join(entry, file)),
  );
  for (const source of sources) {
    const { outputText } = ts.transpileModule(readFileSync(join(root, source), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ES2022,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
      fileName: source,
    });
    const out = join(dir, 'dist', source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
}

/** Runs CommonJS `code` in the package's own folder (it resolves itself by name) on this Node. */
function runCommonJs(code: string) {
  return spawnSync(process.execPath, ['-e', code], { cwd: packageDir, encoding: 'utf8' });
}

beforeAll(() => {
  // The package as it is published (package.json's exports over dist/), without a full build.
  packageDir = mkdtempSync(join(tmpdir(), 'td-require-'));
  transpileInto(packageDir);
  cpSync(join(root, 'package.json'), join(packageDir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(packageDir, 'node_modules'), 'dir');
}, 60_000);

afterAll(() => {
  if (packageDir !== '') rmSync(packageDir, { recursive: true, force: true });
});

describe('require()', () => {
  it('returns the same exports as import for tool-dispatcher', () => {
    const run = runCommonJs(`
      const required = require('tool-dispatcher');
      import('tool-dispatcher').then((imported) => {
        const same = Object.keys(imported).every((name) => required[name] === imported[name]);
        console.log(JSON.stringify({ names: Object.keys(required).length, same,
          dispatcher: typeof required.createDispatcher }));
      });`);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ names: expect.any(Number), same: true, dispatcher: 'function' });
  });

  it.each(subpaths.filter((specifier) => specifier !== 'tool-dispatcher' && !awaitingEntries.has(specifier)))(
    'loads %s',
    (specifier) => {
      const run = runCommonJs(`
      const required = require(${JSON.stringify(specifier)});
      import(${JSON.stringify(specifier)}).then((imported) => {
        const names = Object.keys(imported);
        console.log(names.length > 0 && names.every((name) => required[name] === imported[name]));
      });`);
      expect(run.stderr).toBe('');
      expect(run.stdout.trim()).toBe('true');
    },
  );

  it.each([...awaitingEntries])('of %s is refused by Node: its entry awaits its peers', (specifier) => {
    const run = runCommonJs(`require(${JSON.stringify(specifier)})`);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('ERR_REQUIRE_ASYNC_MODULE');
    expect(run.stderr).not.toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });
});
