import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/soak/**', 'node_modules/**'],
    typecheck: { enabled: true, include: ['test/types/**/*.test-d.ts'] },
    testTimeout: 20_000,
  },
});
