// `npm run test:matrix` (scripts/host-matrix.mjs): one host's integration tests on the host SDK's
// newest release, installed into node_modules/.matrix/<name>-<version>/. TD_MATRIX_HOST names the
// host; every import of its package (and its subpaths, `ai/test` included) made by our code and
// tests resolves as if imported from inside that folder, so the newest SDK and its own
// dependencies load instead of the locked devDependency.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';
// @ts-expect-error: a plain .mjs script, no declarations.
import { hosts, matrixFolder } from './scripts/host-matrix.mjs';

interface MatrixHost {
  packageName: string;
  version: string;
  tests: string[];
}

const name = process.env.TD_MATRIX_HOST ?? '';
const found = (hosts as Record<string, MatrixHost | undefined>)[name];
if (found === undefined) {
  throw new Error(
    `vitest.matrix.config.ts: TD_MATRIX_HOST must be one of ${Object.keys(hosts).join(', ')}, got "${name}"`,
  );
}
const host: MatrixHost = found;
const folder: string = matrixFolder(name);

/** Resolves the host package from the matrix folder instead of the project's node_modules. */
function hostFromMatrixFolder(): Plugin {
  const { packageName } = host;
  // The installed package's own manifest as the importer: Vite starts a bare import's lookup at
  // an importer that exists on disk (else at the project root), here inside the matrix folder.
  const importer = join(folder, 'node_modules', packageName, 'package.json');
  if (!existsSync(importer)) {
    throw new Error(
      `vitest.matrix.config.ts: ${packageName} is not installed in ${folder}; run \`node scripts/host-matrix.mjs ${name}\``,
    );
  }
  return {
    name: 'td-host-matrix',
    enforce: 'pre',
    async resolveId(source, _importer, options) {
      if (source !== packageName && !source.startsWith(`${packageName}/`)) return null;
      return this.resolve(source, importer, { ...options, skipSelf: true });
    },
  };
}

export default defineConfig({
  plugins: [hostFromMatrixFolder()],
  test: {
    include: [
      'test/matrix/**/*.test.ts',
      ...host.tests.map((path) => (path.endsWith('.ts') ? path : `${path}/**/*.test.ts`)),
    ],
    // The tests read it to assert which version they ran on.
    env: { TD_MATRIX_HOST: name, TD_MATRIX_VERSION: host.version, TD_MATRIX_PACKAGE: host.packageName },
    testTimeout: 20_000,
  },
});
