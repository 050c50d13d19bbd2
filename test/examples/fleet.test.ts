// examples/fleet.ts (npm run demo:fleet) runs to completion on a redis-server of its own and
// charges every order once, and says so even for an order whose first worker was killed.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { redisSuitesEnabled } from '../helpers/redis-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const enabled = redisSuitesEnabled('examples/fleet.ts');

let demoRun: Promise<{ code: number; stdout: string }> | undefined;

/** Runs the demo once as `npm run demo:fleet` does, on a redis-server of its own. */
function runDemo(): Promise<{ code: number; stdout: string }> {
  demoRun ??= runDemoOnce();
  return demoRun;
}

function runDemoOnce(): Promise<{ code: number; stdout: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env['REDIS_URL'];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'examples/fleet.ts'],
      { cwd: root, env, timeout: 60_000 },
      (error, out) => resolve({ code: error ? 1 : 0, stdout: out }),
    );
  });
}

describe.skipIf(!enabled)('examples/fleet.ts', () => {
  it('charges each order once across the workers and prints a summary', async () => {
    const { code, stdout } = await runDemo();
    expect(code).toBe(0);
    const summary = stdout.slice(stdout.indexOf('Summary'));
    // Each order is charged once, a killed worker's unfinished charge included (it is said so).
    for (let order = 1001; order <= 1008; order++) {
      expect(summary).toMatch(
        new RegExp(
          `order-${order}: charged once, by w\\d(; w\\d started it and was killed before its charge finished|\n)`,
        ),
      );
    }
    expect(summary).not.toMatch(/TIMES|never finished/);
  }, 70_000);

  it('shows a killed charge even when the last worker never starts one', async () => {
    const { code, stdout } = await runDemo();
    expect(code).toBe(0);
    const summary = stdout.slice(stdout.indexOf('Summary'));
    const killed = /\n {2}(w\d): killed in its first charge/.exec(summary)?.[1];
    expect(killed).toBeDefined();
    expect(summary).toMatch(
      new RegExp(`charged once, by w\\d; ${killed} started it and was killed before its charge finished`),
    );
  }, 70_000);
});
