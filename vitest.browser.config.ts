import { defineConfig } from 'vitest/config';

/**
 * The console page in a real browser (`npm run test:browser`, `.ci/browser.sh`): Chromium from
 * the system's packages driven by playwright-core. Left out of the default `vitest run`.
 */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.browser.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One browser at a time: the machine running CI may have two cores.
    fileParallelism: false,
  },
});
