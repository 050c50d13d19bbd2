// `npm run test:engines`: the durable-engine suites, each starting real servers (restate-server,
// redis-server, DBOS on PostgreSQL) and killing worker processes; kept out of `npm test` for time.
import { defineConfig } from 'vitest/config';
import { engineSuites } from './vitest.config.js';

export default defineConfig({
  test: {
    include: engineSuites,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One engine at a time: each starts its own servers on a 2-core machine.
    fileParallelism: false,
  },
});
