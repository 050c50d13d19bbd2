// require('tool-dispatcher') fails with a message that says the package is ESM-only, for the root
// and every subpath (not ERR_PACKAGE_PATH_NOT_EXPORTED).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const exportsMap = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports as Record<
  string,
  unknown
>;
const subpaths = Object.keys(exportsMap)
  // JSON files (the manifest, mcp-proxy.schema.json) are data, not modules.
  .filter((key) => !key.endsWith('.json'))
  .map((key) => `tool-dispatcher${key.slice(1)}`);

describe('require()', () => {
  it.each(subpaths)('of %s says the package is ESM-only', (specifier) => {
    // The package resolves itself by name from its own folder.
    const run = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(specifier)})`], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('tool-dispatcher is ESM-only');
    expect(run.stderr).not.toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
