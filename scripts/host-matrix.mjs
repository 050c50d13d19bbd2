/**
 * @module host-matrix: runs each host integration's tests on the host SDK's newest release (the
 * previous one is what `npm test` runs, from the locked devDependencies). Each newest SDK is
 * installed from the registry into its own cache folder, `node_modules/.matrix/<name>-<version>/`,
 * and `vitest.matrix.config.ts` points the host's imports at it. Hosts that need Node 22+ run
 * under `scripts/with-node24.mjs` when this Node is older. Plain Node with no dependencies.
 *
 * Usage: `node scripts/host-matrix.mjs [host …]` (hosts: ai, openai, anthropic, cockatiel; all by default).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The newest column of the matrix: the package, the version, the Node major it needs, and the
 * test files that exercise it. Keep in step with `vitest.matrix.config.ts` (which reads the
 * same `TD_MATRIX_*` variables) and the README's host table.
 */
export const hosts = {
  ai: {
    packageName: 'ai',
    version: '7.0.185',
    nodeMajor: 22,
    tests: ['test/integrations/ai-sdk', 'test/examples/ai-sdk-loop.test.ts'],
  },
  openai: {
    packageName: 'openai',
    version: '7.60.0',
    nodeMajor: 22,
    tests: ['test/integrations/openai', 'test/examples/openai-loop.test.ts'],
  },
  anthropic: {
    packageName: '@anthropic-ai/sdk',
    version: '1.17.0',
    nodeMajor: 20,
    tests: ['test/integrations/anthropic', 'test/examples/anthropic-loop.test.ts'],
  },
  // Not a peer: the bench's competitor stack (bench/stacks.ts), smoke-tested on each release.
  cockatiel: {
    packageName: 'cockatiel',
    version: '4.0.0',
    nodeMajor: 22,
    tests: ['test/bench'],
  },
};

/** The folder one host's newest SDK is installed into. */
export function matrixFolder(host) {
  const { packageName, version } = hosts[host];
  return join(root, 'node_modules', '.matrix', `${packageName.replace('/', '+')}-${version}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));

function main(requested) {
  const names = requested.length > 0 ? requested : Object.keys(hosts);
  for (const name of names) if (!(name in hosts)) fail(`unknown host "${name}" (known: ${Object.keys(hosts).join(', ')})`);
  const nodeMajor = Number(process.versions.node.split('.')[0]);
  for (const name of names) {
    const host = hosts[name];
    install(name);
    const vitest = ['npx', 'vitest', 'run', '--config', 'vitest.matrix.config.ts'];
    const command = nodeMajor >= host.nodeMajor ? vitest : ['node', 'scripts/with-node24.mjs', ...vitest];
    process.stderr.write(`\n=== ${host.packageName} ${host.version}: ${host.tests.join(' ')}\n`);
    const run = spawnSync(command[0], command.slice(1), {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, TD_MATRIX_HOST: name },
    });
    if (run.status !== 0) fail(`${host.packageName} ${host.version}: the integration tests failed`);
  }
}

/** Installs a host's newest SDK (with its peers, as npm does) unless it is already there. */
function install(name) {
  const { packageName, version } = hosts[name];
  const folder = matrixFolder(name);
  const manifest = join(folder, 'node_modules', packageName, 'package.json');
  if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === version) return;
  process.stderr.write(`Installing ${packageName}@${version} into ${folder}\n`);
  mkdirSync(folder, { recursive: true });
  const npm = spawnSync(
    'npm',
    ['install', '--prefix', folder, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', '--engine-strict=false', `${packageName}@${version}`],
    { stdio: 'inherit' },
  );
  if (npm.status !== 0 || !existsSync(manifest)) fail(`npm install ${packageName}@${version} failed`);
}

/** Prints one line and exits non-zero. */
function fail(message) {
  process.stderr.write(`host-matrix: ${message}\n`);
  process.exit(1);
}
