// examples/console.ts --smoke runs to completion: three refunds paused, answered through the JSON API
// with the bearer token, each approved one run once; and without a token it refuses in one line.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { token } from './room.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runExample(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'examples/console.ts', '--smoke'],
      { cwd: root, env: { ...process.env, NO_COLOR: '1', ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('examples/console.ts', () => {
  it('answers three paused refunds through the API: one approved twice and run once, one denied, one edited', async () => {
    const { code, stdout, stderr } = await runExample({ TD_CONSOLE_TOKEN: token });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('pending: 3');
    expect(stdout).toContain('[REDACTED:api_key]');
    expect(stdout).not.toContain('AbCdEfGhIjKlMnOpQrStUvWx');
    expect(stdout).toContain('approve twice: 200, 200');
    expect(stdout).toContain('"decision":"denied"');
    expect(stdout).toMatch(
      /edit with invalid args: 422 Invalid edited args for "payments\.refund": amount: /,
    );
    expect(stdout.match(/^refunded \d+$/gm)).toEqual(['refunded 250', 'refunded 100']);
    expect(stdout).toContain('pending after: 0');
    expect(stdout).not.toContain(token);
  });

  it('refuses to start without TD_CONSOLE_TOKEN, in one line', async () => {
    const { code, stdout, stderr } = await runExample({ TD_CONSOLE_TOKEN: '' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe('set TD_CONSOLE_TOKEN to a secret of at least 16 characters\n');
  });
});
