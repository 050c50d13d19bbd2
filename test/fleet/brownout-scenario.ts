// The brownout fleet scenario (issue 34): eight workers on one redis-server of its own, each an
// autopilot on `redisAutopilotStore` (one retry budget for the fleet), call a tool that fails
// transiently 30 % of the time. From their counts: attempts per logical call ≤ 1.10 fleet-wide
// (the static policy makes 1 + 0.3 + 0.09), the tool really failed about 30 % of first attempts,
// some retries were made and some refused (the budget acted, not a tool that never failed), the
// store never failed, and every call was answered. Counts only, no timings: a loaded machine
// slows the run, never the verdict.
// Runs inside `npm run test:fleet`, or alone: `node --import tsx test/fleet/brownout-scenario.ts`.

import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisSuitesEnabled, startRedisServer } from '../helpers/redis-server.js';
import type { BrownoutWorkerConfig } from './brownout-worker.js';

const workerPath = fileURLToPath(new URL('./brownout-worker.ts', import.meta.url));

/** The scenario's settings. */
export const brownoutFleet = {
  workers: 8,
  callsPerWorker: 600,
  concurrency: 4,
  failShare: 0.3,
  maxAttemptsPerCall: 1.1,
} as const;

/** One worker's counts, from its `SUM` line. */
export interface BrownoutCounts {
  worker: string;
  calls: number;
  attempts: number;
  failedFirst: number;
  retries: number;
  refused: number;
  fallbacks: number;
  ok: number;
}

/** The `SUM` lines of a log, and the `CRASH` lines' text. */
export function parseBrownoutLog(text: string): { sums: BrownoutCounts[]; crashes: string[] } {
  const sums: BrownoutCounts[] = [];
  const crashes: string[] = [];
  for (const raw of text.split('\n')) {
    const parts = raw.trim().split(' ');
    if (parts[0] === 'CRASH') crashes.push(parts.slice(1, -2).join(' ').slice(0, 300));
    if (parts[0] !== 'SUM' || parts.length !== 10) continue;
    const [calls, attempts, failedFirst, retries, refused, fallbacks, ok] = parts.slice(1, 8).map(Number);
    sums.push({
      worker: parts[8] as string,
      calls: calls as number,
      attempts: attempts as number,
      failedFirst: failedFirst as number,
      retries: retries as number,
      refused: refused as number,
      fallbacks: fallbacks as number,
      ok: ok as number,
    });
  }
  return { sums, crashes };
}

/** Checks the invariants on the workers' counts; answers the problems found and a summary. */
export function checkBrownoutFleet(
  sums: readonly BrownoutCounts[],
  crashes: readonly string[],
): { problems: string[]; summary: string } {
  const problems = crashes.map((crash) => `a worker crashed: ${crash}`);
  if (sums.length !== brownoutFleet.workers)
    problems.push(`${sums.length} of ${brownoutFleet.workers} workers reported their counts`);
  const total = (field: Exclude<keyof BrownoutCounts, 'worker'>) =>
    sums.reduce((sum, counts) => sum + counts[field], 0);
  const calls = total('calls');
  const attempts = total('attempts');
  const perCall = calls === 0 ? Number.NaN : attempts / calls;
  if (!(perCall <= brownoutFleet.maxAttemptsPerCall))
    problems.push(
      `${perCall.toFixed(3)} attempts per logical call, above ${brownoutFleet.maxAttemptsPerCall}`,
    );
  const failedShare = total('failedFirst') / calls;
  if (!(failedShare > brownoutFleet.failShare - 0.08 && failedShare < brownoutFleet.failShare + 0.08))
    problems.push(`${(failedShare * 100).toFixed(1)} % of first attempts failed: not the brownout asked for`);
  if (total('retries') === 0) problems.push('no retry was made at all: the budget was never open');
  if (total('refused') === 0) problems.push('no retry was refused: the budget never acted');
  if (total('fallbacks') > 0) problems.push(`${total('fallbacks')} calls fell back to the static policy`);
  // Every call answered: each outcome is a success, or the failure the budget kept from a retry.
  const expectedCalls = brownoutFleet.workers * brownoutFleet.callsPerWorker;
  if (calls !== expectedCalls) problems.push(`${calls} calls reported of ${expectedCalls}`);
  const summary =
    `${calls} calls, ${attempts} attempts (${perCall.toFixed(3)} per call), ` +
    `${(failedShare * 100).toFixed(1)} % of first attempts failed, ${total('retries')} retries, ` +
    `${total('refused')} refused by the budget, ${total('ok')} succeeded, ${total('fallbacks')} fallbacks`;
  return { problems, summary };
}

/** Runs the scenario on a redis-server of its own; answers the invariants broken. */
export async function runBrownoutFleet(): Promise<string[]> {
  const server = await startRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'td-fleet-brownout-'));
  const logPath = join(dir, 'brownout.log');
  writeFileSync(logPath, '');
  const prefix = `fleet-brownout-${randomUUID().slice(0, 8)}`;
  const problems: string[] = [];
  const started = performance.now();
  const children = Array.from({ length: brownoutFleet.workers }, (_, index) => {
    const config: BrownoutWorkerConfig = {
      id: `b${index}`,
      url: server.url,
      client: index % 2 === 0 ? 'node-redis' : 'ioredis',
      prefix,
      logPath,
      seed: 9_000 + index,
      calls: brownoutFleet.callsPerWorker,
      concurrency: brownoutFleet.concurrency,
      failShare: brownoutFleet.failShare,
    };
    const child = fork(workerPath, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, TD_FLEET_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { child, exited };
  });
  try {
    // A bound for a worker that hangs, not a timing under test.
    const hung = await Promise.race([
      Promise.all(children.map((worker) => worker.exited)).then(() => false),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 120_000).unref()),
    ]);
    if (hung) problems.push('workers still running after 120 s');
    const { sums, crashes } = parseBrownoutLog(readFileSync(logPath, 'utf8'));
    const verdict = checkBrownoutFleet(sums, crashes);
    problems.push(...verdict.problems);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`brownout ${brownoutFleet.workers} workers on one Redis: ${verdict.summary}; ${seconds} s`);
  } finally {
    for (const { child } of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await server.stop();
    if (problems.length === 0) rmSync(dir, { recursive: true, force: true });
    else problems.push(`logs in ${logPath}`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && redisSuitesEnabled('fleet brownout')) {
  const problems = await runBrownoutFleet();
  for (const problem of problems.slice(0, 40)) console.error(`  - ${problem}`);
  if (problems.length > 0) process.exitCode = 1;
  else console.log('brownout fleet: every invariant holds');
}
