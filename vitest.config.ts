import { defineConfig } from 'vitest/config';

/** The durable-engine suites: `npm run test:engines` (vitest.engines.config.ts) runs them. */
export const engineSuites = ['test/integrations/restate/**/*.test.ts', 'test/integrations/dbos/**/*.test.ts'];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/soak/**', 'test/browser/**', 'node_modules/**', ...engineSuites],
    // No typecheck mode: `npm test` runs `tsc` once first (`npm run typecheck`), and tsconfig.json
    // includes test/, so the type tests in test/types/*.test-d.ts are checked there; vitest's own
    // typecheck ran a second tsc over the same files.
    testTimeout: 20_000,
  },
});
