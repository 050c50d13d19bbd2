// The process exits on its own after a workload: no timer, listener or handle of the library keeps it alive.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./soak/exit-fixture.ts', import.meta.url));
const root = fileURLToPath(new URL('..', import.meta.url));

// A hang guard, not a timing assertion: the workload itself takes well under a second.
const hangGuardMs = 20_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  hung: boolean;
  stdout: string;
  stderr: string;
}

function runFixture(): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let hung = false;
    const guard = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, hangGuardMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, hung, stdout, stderr });
    });
  });
}

describe('process exit', () => {
  it(
    'exits with code 0 by itself after leaving cached keys, an open circuit and a timed-out hung handler',
    async () => {
      const exit = await runFixture();
      const report = `stdout:\n${exit.stdout}\nstderr:\n${exit.stderr}`;
      expect(exit.hung, `still running after ${hangGuardMs} ms\n${report}`).toBe(false);
      expect(exit.code, report).toBe(0);
      expect(exit.stdout).toContain('workload done: 20 keys cached, circuit open');
    },
    hangGuardMs + 10_000,
  );
});
