// examples/fleet.ts (npm run demo:fleet) runs to completion on a redis-server of its own and
// charges every order once (twice only after a killed worker's lease ended).

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { redisSuitesEnabled } from '../helpers/redis-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const enabled = redisSuitesEnabled('examples/fleet.ts');

describe.skipIf(!enabled)('examples/fleet.ts', () => {
  it('charges each order once across the workers and prints a summary', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    delete env['REDIS_URL'];
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'examples/fleet.ts'],
        { cwd: root, env, timeout: 60_000 },
        (error, out) => resolve({ code: error ? 1 : 0, stdout: out }),
      );
    });
    expect(code).toBe(0);
    const summary = stdout.slice(stdout.indexOf('Summary'));
    // Once each, except an order whose worker was killed mid-charge: re-run after its lease.
    for (let order = 1001; order <= 1008; order++) {
      expect(summary).toMatch(
        new RegExp(`order-${order}: charged (once|2 times .*re-ran it after the lease)`),
      );
    }
  }, 70_000);
});
