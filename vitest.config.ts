import { defineConfig } from 'vitest/config';

/** The durable-engine suites: `npm run test:engines` (vitest.engines.config.ts) runs them. */
export const engineSuites = ['test/integrations/restate/**/*.test.ts', 'test/integrations/dbos/**/*.test.ts'];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/soak/**', 'node_modules/**', ...engineSuites],
    typecheck: { enabled: true, include: ['test/types/**/*.test-d.ts'] },
    testTimeout: 20_000,
  },
});
