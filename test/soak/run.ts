// Runs the soak script in a child process with --expose-gc and a time limit, and exits with its verdict.
//
//   node --import tsx test/soak/run.ts
//
// SOAK_SCALE (default 1) scales the workload; SOAK_TIME_LIMIT_MS (default 150 000) kills a run
// that takes longer, which counts as a failure (a hang is a finding too).

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./soak.ts', import.meta.url));
const limitMs = Number(process.env['SOAK_TIME_LIMIT_MS'] ?? '150000');

const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
  stdio: 'inherit',
  env: process.env,
});

const timer = setTimeout(() => {
  console.error(`soak FAILED: no verdict within ${limitMs} ms; killing it`);
  child.kill('SIGKILL');
}, limitMs);

child.on('exit', (code, signal) => {
  clearTimeout(timer);
  if (code === 0) return;
  if (signal !== null) console.error(`soak FAILED: the soak process was killed by ${signal}`);
  process.exitCode = code ?? 1;
});
