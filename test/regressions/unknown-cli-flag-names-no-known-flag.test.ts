// Regression (issue 31, item 30): `tool-dispatcher mcp-proxy --timeout 5000` answered only
// "Unknown option '--timeout'", leaving the user to find `--timeout-ms` in the usage text.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../../integrations/mcp/cli.ts', import.meta.url));

const run = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: root, encoding: 'utf8' });

it('answers --timeout with "did you mean --timeout-ms", and a far-off flag without a guess', () => {
  for (const [flag, meant] of [
    ['--timeout', '--timeout-ms'],
    ['--timeoutMs', '--timeout-ms'],
    ['--max_attempts', '--max-attempts'],
    ['--require-aproval', '--require-approval'],
  ]) {
    const answer = run(['mcp-proxy', flag as string, '5', '--', 'node', 'server.js']);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toMatch(
      new RegExp(`^tool-dispatcher: Unknown option '${flag}': did you mean ${meant}\\?\\n\\nUsage:`),
    );
  }
  expect(run(['mcp-proxy', '--bogus']).stderr).toMatch(/^tool-dispatcher: Unknown option '--bogus'\n/);
  expect(run(['mcp-prxy']).stderr).toMatch(
    /^tool-dispatcher: Unknown command "mcp-prxy": did you mean mcp-proxy\?/,
  );
});
