// scripts/install-if-needed.mjs (run before `npm start` and `npm test`) runs `npm ci` only when
// node_modules is missing or does not match package-lock.json.

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = join(import.meta.dirname, '../../scripts/install-if-needed.mjs');
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

type Packages = Record<string, { version?: string; optional?: boolean }>;

// A project folder with the script, a lockfile, what npm recorded as installed, and an `npm` on
// PATH that only writes down how it was called.
function project(locked: Packages, installed: Packages | undefined) {
  const folder = mkdtempSync(join(tmpdir(), 'td-install-'));
  folders.push(folder);
  mkdirSync(join(folder, 'scripts'));
  mkdirSync(join(folder, 'bin'));
  copyFileSync(script, join(folder, 'scripts', 'install-if-needed.mjs'));
  writeFileSync(join(folder, 'package-lock.json'), JSON.stringify({ packages: { '': {}, ...locked } }));
  if (installed !== undefined) {
    mkdirSync(join(folder, 'node_modules'));
    writeFileSync(
      join(folder, 'node_modules', '.package-lock.json'),
      JSON.stringify({ packages: installed }),
    );
  }
  const npm = join(folder, 'bin', 'npm');
  writeFileSync(npm, `#!/bin/sh\necho "$@" > "${join(folder, 'npm-called')}"\n`);
  chmodSync(npm, 0o755);
  const run = () => {
    const env = { ...process.env, PATH: `${join(folder, 'bin')}:${process.env['PATH'] ?? ''}` };
    execFileSync(process.execPath, [join(folder, 'scripts', 'install-if-needed.mjs')], {
      env,
      stdio: 'pipe',
    });
    const called = join(folder, 'npm-called');
    return existsSync(called) ? readFileSync(called, 'utf8').trim() : undefined;
  };
  return { run };
}

const zod = { 'node_modules/zod': { version: '4.6.7' } };

describe('install-if-needed', () => {
  it('runs npm ci when nothing is installed', () => {
    expect(project(zod, undefined).run()).toBe('ci --no-audit --no-fund');
  });

  it('runs npm ci when an installed version differs from the lockfile', () => {
    expect(project(zod, { 'node_modules/zod': { version: '4.0.0' } }).run()).toMatch(/^ci/);
  });

  it('does nothing when node_modules matches the lockfile', () => {
    expect(project(zod, zod).run()).toBeUndefined();
  });

  it('does not install optional packages npm skipped for this platform', () => {
    const locked = { ...zod, 'node_modules/@esbuild/win32-x64': { version: '0.28.2', optional: true } };
    expect(project(locked, zod).run()).toBeUndefined();
  });
});
