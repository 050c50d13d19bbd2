/**
 * @module install-if-needed: runs `npm ci` before `npm start` and `npm test` when node_modules is
 * missing or does not match package-lock.json, and does nothing when it does (as in CI after its
 * own `npm ci`). Plain Node with no dependencies, since it runs before any are installed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Why node_modules does not match the lockfile, or `undefined` when it does. */
function staleReason() {
  const installedPath = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(installedPath)) return 'no dependencies are installed';
  const locked = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages ?? {};
  const installed = JSON.parse(readFileSync(installedPath, 'utf8')).packages ?? {};
  for (const [path, entry] of Object.entries(locked)) {
    if (path === '' || !path.startsWith('node_modules/') || entry.link) continue;
    const have = installed[path];
    // npm leaves out optional packages built for other platforms; one it did install must match.
    if (have === undefined && entry.optional) continue;
    if (have?.version !== entry.version) return `${path.slice('node_modules/'.length)} is not installed at ${entry.version}`;
  }
  return undefined;
}

const reason = staleReason();
if (reason !== undefined) {
  process.stderr.write(`Installing the locked dependencies (npm ci): ${reason}.\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(result.status ?? 1);
}
