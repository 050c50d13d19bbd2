// The Redis rows of bench/run.ts: bench/redis.ts run in a child process, its targets and its section of docs/benchmarks.md.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisBenchResult, Round } from './redis.js';

const root = fileURLToPath(new URL('..', import.meta.url));

// The Redis stores (bench/redis.ts) in a child process of their own: it starts its own
// redis-server and worker processes, and prints its result as the last line. Without a
// redis-server on this machine its rows say so instead of failing the run.
/** A row of the targets table, as bench/run.ts keeps them. */
export interface RedisTargetCheck {
  name: string;
  target: string;
  measured: string;
  met: boolean | undefined;
}

/**
 * Runs bench/redis.ts in a child process (`libraryArgs` say which build it loads), logs its
 * output, and answers its result and target rows.
 */
export function redisBench(
  log: (text?: string) => void,
  libraryArgs: string[],
): { checks: RedisTargetCheck[]; result: RedisBenchResult } {
  log();
  log('5. Redis stores (child process: node --import tsx bench/redis.ts)');
  const child = spawnSync(process.execPath, ['--import', 'tsx', 'bench/redis.ts', ...libraryArgs], {
    cwd: root,
    encoding: 'utf8',
    timeout: 300_000,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = (child.stdout ?? '').trimEnd().split('\n');
  const last = lines.pop() ?? '';
  for (const line of lines) log(`   ${line}`);
  let result: RedisBenchResult;
  try {
    result = JSON.parse(last) as RedisBenchResult;
  } catch {
    result = {
      measured: false,
      reason: `bench/redis.ts failed (status ${String(child.status)}): ${last || String(child.error)}`,
    };
  }
  if (!result.measured && lines.length === 0) log(`   Redis rows not measured: ${result.reason}`);
  return { result, checks: redisChecks(result) };
}

const redisThroughputName =
  'Redis: keyed dispatches vs bare SET NX PX + GET pairs, same client, concurrency 64 across 4 processes';
const limitedThroughputName =
  'Redis: rateLimit + windowedBudget dispatches (64 tenants) vs bare EVALSHA of the same two scripts, same client, concurrency 64 across 4 processes';

/** The target rows of a bench/redis.ts result. */
export function redisChecks(result: RedisBenchResult): RedisTargetCheck[] {
  if (!result.measured) {
    const notMeasured = (name: string, target: string): RedisTargetCheck => ({
      name,
      target,
      measured: 'not measured',
      met: undefined,
    });
    return [
      notMeasured('Redis: round trips per dispatch path', 'issue 14 and 22 budgets'),
      notMeasured(redisThroughputName, '≥ 0.5×'),
      notMeasured(limitedThroughputName, '≥ 0.5×'),
    ];
  }
  const { rounds, median, ratioUntimed, limitedMedian } = result.throughput;
  const range = (ratios: number[]) =>
    `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} over ${ratios.length} rounds`;
  return [
    ...result.roundTrips.map((row) => ({
      name: `Redis: round trips, ${row.path}`,
      target: row.budget === 0 ? '0' : `≤ ${row.budget}`,
      measured: row.trips.toFixed(2).replace(/\.00$/, ''),
      met: row.trips <= row.budget,
    })),
    {
      name: redisThroughputName,
      target: `≥ ${result.target}×`,
      measured: `${median.ratio.toFixed(2)}× (${range(rounds.map((round) => round.ratio))})`,
      met: median.ratio >= result.target,
    },
    {
      name: "Redis: the same vs bare pairs without node-redis's per-command timer (as the stores' scripts run)",
      target: 'reported',
      measured: `${ratioUntimed.toFixed(2)}× (${range(rounds.map((round) => round.ratioUntimed))})`,
      met: undefined,
    },
    ...(limitedMedian === undefined
      ? []
      : [
          {
            name: limitedThroughputName,
            target: `≥ ${result.target}×`,
            measured: `${limitedMedian.limitedRatio.toFixed(2)}× (${range(rounds.map((round) => round.limitedRatio))})`,
            met: limitedMedian.limitedRatio >= result.target,
          },
        ]),
  ];
}

/** Section 6 of docs/benchmarks.md. */
export function redisMarkdown(redis: RedisBenchResult): string {
  if (!redis.measured) return `Not measured: ${redis.reason}.`;
  const { processes, concurrency, seconds, rounds, median, ratioUntimed, limitedMedian } = redis.throughput;
  const row = (name: string, unit: string, result: (typeof median)['bare']) =>
    `| ${name} | ${Math.round(result.rate).toLocaleString('en')} ${unit} | ${result.clientCpuUs.toFixed(0)} µs | ${result.serverCpuUs.toFixed(0)} µs |`;
  return `\`bench/redis.ts\` starts a redis-server ${redis.server} of its own (never a shared one) and
measures the library as the rest of this page does (${redis.library}), through node-redis.

Round trips per dispatch path, counted by a client wrapper (issue 14's budgets, and issue 22's
for \`rateLimit\` and \`windowedBudget\` on \`redisRateStore\` and \`redisWindowStore\`):

| path | round trips | budget |
| --- | ---: | ---: |
${redis.roundTrips.map((trip) => `| ${trip.path} | ${trip.trips.toFixed(2)} | ${trip.budget} |`).join('\n')}

Throughput: ${processes} worker processes, ${concurrency / processes} calls in flight in each
(${concurrency} in all), each case ${seconds} s per round, every worker starting on the parent's
word; the cases alternate in order over ${rounds.length} rounds, and the row shown is the round
with the median keyed / bare ratio. A keyed dispatch is a miss every time (a fresh key): \`claim\`
and \`complete\`, two Lua scripts, through \`[errorMapping(), toolLookup(), idempotency({ store })]\`.
The bare pair is \`SET key v NX PX 60000\` then \`GET key\` on the same client. CPU is per
operation, the workers' summed and redis-server's own.

| case | throughput | workers' CPU per op | redis-server CPU per op |
| --- | ---: | ---: | ---: |
${row('bare SET NX PX + GET', 'pairs/s', median.bare)}
${row('keyed dispatch (miss)', 'dispatches/s', median.keyed)}
${row("bare pair without node-redis's command timer", 'pairs/s', median.bareUntimed)}

- keyed / bare: **${median.ratio.toFixed(2)}×** (target ≥ ${redis.target}×; rounds: ${rounds.map((round) => round.ratio.toFixed(2)).join(', ')})
- keyed / bare without the command timer: ${ratioUntimed.toFixed(2)}× (rounds: ${rounds.map((round) => round.ratioUntimed.toFixed(2)).join(', ')})

node-redis 6 arms an \`AbortSignal.timeout\` for every command (5 s by default, dropped once
the command is written); on Node 20 that costs more CPU than the rest of a command. The stores
run their scripts without it (each store call has its own deadline, \`storeTimeoutMs\`), the
bare pairs with the client's defaults, as an application's own commands run; the last row runs
the bare pairs without it too. What a keyed miss costs beyond such a pair is the two scripts on
the server and the dispatch around them.${limitedMedian === undefined ? '' : limitedSection(limitedMedian, rounds)}`;
}

// Issue 22's comparison: the two scripts a limited dispatch runs, through the layers and bare.
function limitedSection(median: Round, rounds: Round[]): string {
  const row = (name: string, unit: string, result: Round['limited']) =>
    `| ${name} | ${Math.round(result.rate).toLocaleString('en')} ${unit} | ${result.clientCpuUs.toFixed(0)} µs | ${result.serverCpuUs.toFixed(0)} µs |`;
  return `

Rate limits and budgets (issue 22), in the same rounds: a dispatch through
\`[errorMapping(), toolLookup(), rateLimit({ store: redisRateStore }), windowedBudget({ store: redisWindowStore })]\`,
keyed by tenant (64 tenants, never limiting, the actual cost the reserved one: no settle), against
the same two scripts (acquire, then reserve) sent bare with \`EVALSHA\` from the same clients and
without the command timer, as the stores send them. The row shown is the round with the median
ratio.

| case | throughput | workers' CPU per op | redis-server CPU per op |
| --- | ---: | ---: | ---: |
${row('bare EVALSHA acquire + reserve', 'pairs/s', median.bareEval)}
${row('rateLimit + windowedBudget dispatch', 'dispatches/s', median.limited)}

- limited / bare: **${median.limitedRatio.toFixed(2)}×** (target ≥ 0.5×; rounds: ${rounds.map((round) => round.limitedRatio.toFixed(2)).join(', ')})`;
}
