// The console page's bundle: built by scripts/build-console.mjs into two fixed names, small, and
// free of the ways a page could leak a secret or turn data into markup.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const pageSources = join(root, 'integrations/console/page');
const limit = 150 * 1024;

describe('the console page bundle', () => {
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(join(tmpdir(), 'td-console-page-'));
    execFileSync(process.execPath, [join(root, 'scripts/build-console.mjs'), '--out', out], {
      stdio: 'pipe',
    });
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('builds exactly app.js and app.css, the names the shell loads', () => {
    expect(readdirSync(out).sort()).toEqual(['app.css', 'app.js']);
  });

  it('weighs at most 150 KB gzipped, script and style together', () => {
    const gzipped = ['app.js', 'app.css'].reduce(
      (sum, name) => sum + gzipSync(readFileSync(join(out, name)), { level: 9 }).length,
      0,
    );
    expect(gzipped).toBeGreaterThan(1000);
    expect(gzipped).toBeLessThanOrEqual(limit);
  });

  it('keeps the CSRF token out of storage and writes no data as markup', () => {
    const script = readFileSync(join(out, 'app.js'), 'utf8');
    for (const banned of [
      'localStorage',
      'sessionStorage',
      'innerHTML',
      'outerHTML',
      'insertAdjacentHTML',
      'document.write',
      'eval(',
    ]) {
      expect(script, banned).not.toContain(banned);
    }
    for (const file of readdirSync(pageSources)) {
      const text = readFileSync(join(pageSources, file), 'utf8');
      expect(text, file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|localStorage|sessionStorage/);
    }
  });
});
