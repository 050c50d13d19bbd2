// The Redis stores' costs on a local redis-server of its own (never the shared one on 6379):
//   1. round trips per dispatch path, counted by a wrapping client (held to issue 14's budgets);
//   2. throughput of keyed dispatches at concurrency 64 across 4 processes, against bare
//      `SET NX PX` + `GET` pairs from the same client at the same concurrency (target ≥ 0.5×).
//      The stores run their scripts without node-redis's per-command timer (client.ts says
//      why); a third case, reported beside the target, runs the bare pairs without it too;
//   3. issue 22's: dispatches through `rateLimit` and `windowedBudget` on the Redis stores, keyed
//      by tenant (64 tenants, never limiting), against bare `EVALSHA` calls of the same two
//      scripts (acquire, then reserve) from the same clients, without the command timer as the
//      stores' scripts run (≥ 0.5×): what the layers cost beyond the round trips they make.
//
//   npx tsx bench/redis.ts [--seconds 1] [--processes 4] [--concurrency 64] [--rounds 9]
//   npm run bench:redis
//
// The library is the tsc build (bench/.build, as in bench/run.ts; see library.ts), so neither
// side pays tsx's per-closure `__name` wrappers; `--source` measures the TypeScript source and
// `--library path/to/index.js` another build. The worker processes start once, warm both cases
// up, and then run every round: each round runs the two cases one after the other (in an order
// that alternates), all workers starting together on the parent's word, on the same client
// and connection. The ratio is the median of the rounds' ratios: many short rounds, so that a
// burst of other work on the machine moves a few rounds, not the median.
//
// The layers are the built-in ones with a `store`. Exits 1 when a round-trip budget or the
// throughput target is missed, 2 (printing why) when redis-server is not installed. The last
// line of stdout is the result as JSON, for bench/run.ts.

import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createClient } from 'redis';
import { z } from 'zod';
import { redisBinary, startRedisServer } from '../test/helpers/redis-server.js';
import { countingClient } from '../test/integrations/redis/counting.js';
import { rateAcquireScript, windowReserveScript } from '../integrations/redis/rate-scripts.js';
import { buildDir, loadLibrary, loadOptionsFromArgv, type Library, type LoadOptions } from './library.js';

/** The `tool-dispatcher/redis` subpath. */
type RedisLibrary = typeof import('../integrations/redis/index.js');

/** One case of the throughput comparison. */
type Mode = 'bare' | 'keyed' | 'bareUntimed' | 'limited' | 'bareEval';

/** What one round trip budget row says. */
export interface RoundTripRow {
  path: string;
  trips: number;
  budget: number;
}

/** One case of one round: the workers' summed rate, and the CPU spent per operation. */
export interface CaseResult {
  /** Operations per second, summed over the workers. */
  rate: number;
  /** The workers' CPU time per operation, in µs. */
  clientCpuUs: number;
  /** redis-server's CPU time per operation, in µs. */
  serverCpuUs: number;
}

/** One round: both cases, run one after the other. */
export interface Round {
  bare: CaseResult;
  keyed: CaseResult;
  /** The bare pairs without node-redis's per-command timer, as the stores' scripts run. */
  bareUntimed: CaseResult;
  /** keyed.rate / bare.rate: the comparison. */
  ratio: number;
  /** keyed.rate / bareUntimed.rate. */
  ratioUntimed: number;
  /** Dispatches through rateLimit and windowedBudget on Redis, keyed by tenant. */
  limited: CaseResult;
  /** Bare EVALSHA pairs of the acquire and reserve scripts, without the command timer. */
  bareEval: CaseResult;
  /** limited.rate / bareEval.rate: issue 22's comparison. */
  limitedRatio: number;
}

/** What bench/redis.ts prints as its last line. */
export type RedisBenchResult =
  | {
      measured: true;
      server: string;
      library: string;
      roundTrips: RoundTripRow[];
      throughput: {
        processes: number;
        concurrency: number;
        seconds: number;
        /** Per round: each case's summed rate and CPU, and keyed / bare. */
        rounds: Round[];
        /** The round with the median ratio. */
        median: Round;
        /** The median of the rounds' keyed / bareUntimed ratios. */
        ratioUntimed: number;
        /** The round with the median limited / bareEval ratio (absent from runs before issue 22). */
        limitedMedian?: Round;
      };
      /** The throughput target: keyed / bare at least this. */
      target: number;
    }
  | { measured: false; reason: string };

/** keyed / bare throughput the issue asks for. */
export const throughputTarget = 0.5;

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};

/** The root and the redis subpath of the library under test, from the same build. */
async function loadBoth(
  options: LoadOptions,
): Promise<{ lib: Library; redis: RedisLibrary; origin: string }> {
  const { lib, origin } = await loadLibrary(options);
  const redisEntry =
    origin === 'source'
      ? new URL('../integrations/redis/index.ts', import.meta.url).href
      : pathToFileURL(
          `${origin === 'path' ? dirname(String(options.path)) : buildDir}/integrations/redis/index.js`,
        ).href;
  return { lib, redis: (await import(redisEntry)) as RedisLibrary, origin };
}

async function connect(redisLib: RedisLibrary, url: string) {
  const raw = createClient({ url, disableOfflineQueue: true });
  const subscriber = raw.duplicate();
  raw.on('error', () => {});
  subscriber.on('error', () => {});
  await raw.connect();
  await subscriber.connect();
  return {
    store: redisLib.fromNodeRedis(raw, { subscriber }),
    raw,
    close: () => {
      raw.destroy();
      subscriber.destroy();
    },
  };
}

function registry(lib: Library) {
  return new lib.ToolRegistry()
    .register({
      name: 'payments.charge',
      description: 'Charges.',
      inputSchema: z.object({ orderId: z.string() }),
      handler: async ({ orderId }) => ({ orderId }),
    })
    .register({
      name: 'flaky',
      description: 'Fails.',
      inputSchema: z.object({}),
      handler: async () => {
        throw new lib.TransientError('down');
      },
    })
    .register({
      name: 'llm.summarize',
      description: 'Costs 4 units, settles what it used.',
      inputSchema: z.object({ used: z.number() }),
      cost: 4,
      settle: (result: { used: number }) => result.used,
      handler: async ({ used }) => ({ used }),
    });
}

async function roundTrips(lib: Library, redisLib: RedisLibrary, url: string): Promise<RoundTripRow[]> {
  const connected = await connect(redisLib, url);
  const counting = countingClient(connected.store);
  const prefix = `bench-${randomUUID()}`;
  const idempotencyStore = redisLib.redisIdempotencyStore(counting, { prefix });
  const slots = redisLib.redisSlotStore(counting, { prefix, pool: 'api', max: 64 });
  const circuits = redisLib.redisCircuitStore(counting, { prefix, mirrorTtlMs: 60_000 });
  const budget = await redisLib.redisBudget(counting, { prefix, id: 'run', limit: 1_000 });
  const tools = registry(lib);
  const base = () => [lib.errorMapping(), lib.toolLookup(tools)];
  const keyed = lib.createDispatcher([...base(), lib.idempotency({ store: idempotencyStore })]);
  const slotted = lib.createDispatcher([...base(), lib.concurrencyLimit({ store: slots })]);
  const guarded = lib.createDispatcher([...base(), lib.circuitBreaker({ store: circuits })]);
  const budgeted = lib.createDispatcher(base());
  const measure = async (path: string, budgetTrips: number, run: () => Promise<unknown>, times = 20) => {
    counting.reset();
    for (let i = 0; i < times; i++) await run();
    return { path, trips: counting.total() / times, budget: budgetTrips };
  };
  let n = 0;
  const rows = [
    await measure('keyed miss (leader)', 2, () =>
      keyed.dispatch('payments.charge', { orderId: `o${++n}` }, { idempotencyKey: `k${n}` }),
    ),
    await measure('keyed hit', 1, () =>
      keyed.dispatch('payments.charge', { orderId: 'o1' }, { idempotencyKey: 'k1' }),
    ),
  ];
  // Same-process followers: 10 callers of one key, one of them leads.
  counting.reset();
  const key = `same-${randomUUID()}`;
  await Promise.all(
    Array.from({ length: 10 }, () =>
      keyed.dispatch('payments.charge', { orderId: 'same' }, { idempotencyKey: key }),
    ),
  );
  rows.push({ path: 'same-process follower', trips: (counting.total() - 2) / 9, budget: 0 });
  await guarded.dispatch('payments.charge', { orderId: 'x' }); // the first read of a circuit fills the mirror
  await new Promise((resolve) => setTimeout(resolve, 50));
  rows.push(
    await measure('breaker closed, success', 0, () => guarded.dispatch('payments.charge', { orderId: 'x' })),
  );
  rows.push(
    await measure('budget, per attempt', 1, () =>
      budgeted.dispatch('payments.charge', { orderId: 'x' }, { budget }),
    ),
  );
  rows.push(
    await measure('slot acquire + release', 2, () => slotted.dispatch('payments.charge', { orderId: 'x' })),
  );
  rows.push(...(await limitRoundTrips(lib, redisLib, counting, prefix)));
  connected.close();
  return rows;
}

// Issue 22's: acquire 1, reserve 1, settle at most 1 and none when the actual cost is the reserved one.
async function limitRoundTrips(
  lib: Library,
  redisLib: RedisLibrary,
  counting: ReturnType<typeof countingClient>,
  prefix: string,
): Promise<RoundTripRow[]> {
  const dispatcher = lib.createDispatcher([
    lib.errorMapping(),
    lib.toolLookup(registry(lib)),
    lib.rateLimit({
      key: (ctx) => String(ctx.options.tenant),
      rate: 1e9,
      store: redisLib.redisRateStore(counting, { prefix }),
    }),
    lib.windowedBudget({
      key: (ctx) => ctx.options.tenant,
      limit: 1e9,
      windowMs: 60_000,
      store: redisLib.redisWindowStore(counting, { prefix }),
    }),
  ]);
  const times = 20;
  const perDispatch = async (used: number) => {
    counting.reset();
    for (let i = 0; i < times; i++) {
      const outcome = await dispatcher.dispatch('llm.summarize', { used }, { tenant: `t${i}` });
      if (!outcome.ok) throw new Error(`llm.summarize: ${outcome.kind}`);
    }
    const counts = new Map(counting.counts);
    return { of: (name: string) => (counts.get(name) ?? 0) / times, total: counting.total() / times };
  };
  const same = await perDispatch(4);
  const differs = await perDispatch(2);
  return [
    { path: 'rateLimit: acquire', trips: same.of('rate acquire'), budget: 1 },
    { path: 'windowedBudget: reserve', trips: same.of('window reserve'), budget: 1 },
    { path: 'windowedBudget: settle, actual = reserved', trips: same.of('window settle'), budget: 0 },
    { path: 'windowedBudget: settle, actual ≠ reserved', trips: differs.of('window settle'), budget: 1 },
    { path: 'rateLimit + windowedBudget, in all', trips: same.total, budget: 2 },
  ];
}

// ---------------------------------------------------------------------------------------------
// The worker processes

/** What the parent tells a worker. */
type Command = { run: Mode; ms: number } | { exit: true };
/** What a worker answers: ready once warm, then one count per run. */
type Reply = { ready: true } | { ops: number; ms: number; cpuUs: number };

async function worker(url: string, concurrency: number, options: LoadOptions): Promise<void> {
  const { lib, redis: redisLib } = await loadBoth(options);
  const connected = await connect(redisLib, url);
  const prefix = `bench-${randomUUID()}`;
  const keyed = lib.createDispatcher([
    lib.errorMapping(),
    lib.toolLookup(registry(lib)),
    lib.idempotency({ store: redisLib.redisIdempotencyStore(connected.store, { prefix }) }),
  ]);
  const untimed = connected.raw.withCommandOptions({ timeout: 0 });
  const limited = lib.createDispatcher([
    lib.errorMapping(),
    lib.toolLookup(registry(lib)),
    lib.rateLimit({
      key: (ctx) => String(ctx.options.tenant),
      rate: 1e9,
      store: redisLib.redisRateStore(connected.store, { prefix }),
    }),
    lib.windowedBudget({
      key: (ctx) => ctx.options.tenant,
      limit: 1e12,
      windowMs: 60_000,
      store: redisLib.redisWindowStore(connected.store, { prefix }),
    }),
  ]);
  const tenants = Array.from({ length: 64 }, (_, i) => `tenant-${i}`);
  await connected.raw.scriptLoad(rateAcquireScript.lua);
  await connected.raw.scriptLoad(windowReserveScript.lua);
  let n = 0;
  const once: Record<Mode, () => Promise<unknown>> = {
    keyed: async () => {
      const key = `${prefix}:${++n}`;
      const outcome = await keyed.dispatch('payments.charge', { orderId: key }, { idempotencyKey: key });
      if (!outcome.ok) throw outcome;
    },
    bare: async () => {
      const key = `${prefix}:${++n}`;
      await connected.raw.set(key, 'v', { condition: 'NX', expiration: { type: 'PX', value: 60_000 } });
      await connected.raw.get(key);
    },
    bareUntimed: async () => {
      const key = `${prefix}:${++n}`;
      await untimed.set(key, 'v', { condition: 'NX', expiration: { type: 'PX', value: 60_000 } });
      await untimed.get(key);
    },
    limited: async () => {
      const tenant = tenants[++n & 63] as string;
      const outcome = await limited.dispatch('llm.summarize', { used: 4 }, { tenant });
      if (!outcome.ok) throw outcome;
    },
    // The scripts a limited dispatch runs, with the arguments the stores send (a fresh attempt id each).
    bareEval: async () => {
      const tenant = tenants[++n & 63] as string;
      const id = `bare${n}`;
      const epoch = [`${prefix}:epoch`];
      await untimed.evalSha(rateAcquireScript.sha, {
        keys: [
          `${prefix}:rl:{${tenant}}`,
          ...epoch,
          `${prefix}:rl-reset`,
          `${prefix}:rl:{${tenant}}:a:${id}`,
        ],
        arguments: ['', 'e', id, '1', '1e-6', '1000', '5000', '6000'],
      });
      await untimed.evalSha(windowReserveScript.sha, {
        keys: [
          `${prefix}:wb:{${tenant}}`,
          ...epoch,
          `${prefix}:wb-reset`,
          `${prefix}:wb:{${tenant}}:a:${id}`,
        ],
        arguments: ['', 'e', id, '4', String(Number.MAX_SAFE_INTEGER), '60000'],
      });
    },
  };
  const run = async (mode: Mode, ms: number) => {
    let ops = 0;
    let running = true;
    const started = performance.now();
    const cpu = process.cpuUsage();
    setTimeout(() => (running = false), ms);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (running) {
          await once[mode]();
          ops += 1;
        }
      }),
    );
    const spent = process.cpuUsage(cpu);
    return { ops, ms: performance.now() - started, cpuUs: spent.user + spent.system };
  };
  // Warm both cases up (JIT, the connection's buffers) before any round is timed.
  for (let i = 0; i < 3; i++) {
    await run('bare', 300);
    await run('keyed', 300);
    await run('bareUntimed', 300);
    await run('limited', 300);
    await run('bareEval', 300);
  }
  const send = (reply: Reply) => process.send?.(reply);
  process.on('message', (command: Command) => {
    if ('exit' in command) {
      connected.close();
      process.exit(0);
    }
    run(command.run, command.ms).then(send, (error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  });
  send({ ready: true });
}

/** Workers that run the cases on the parent's word. */
class Workers {
  readonly #children: ChildProcess[];

  private constructor(children: ChildProcess[]) {
    this.#children = children;
  }

  static async start(url: string, processes: number, concurrency: number, libraryArgs: string[]) {
    const file = fileURLToPath(import.meta.url);
    const children = Array.from({ length: processes }, () =>
      fork(file, ['--worker', url, String(concurrency), ...libraryArgs], {
        execArgv: ['--import', 'tsx'],
      }),
    );
    const workers = new Workers(children);
    await workers.#each(() => undefined);
    return workers;
  }

  /**
   * Runs `mode` for `ms` in every worker at once; answers their summed rate (per second), and
   * their operations and CPU time in all.
   */
  async run(mode: Mode, ms: number): Promise<{ rate: number; ops: number; cpuUs: number }> {
    const replies = await this.#each((child) => child.send({ run: mode, ms } satisfies Command));
    const total = { rate: 0, ops: 0, cpuUs: 0 };
    for (const reply of replies) {
      if (!('ops' in reply)) continue;
      total.rate += (reply.ops / reply.ms) * 1_000;
      total.ops += reply.ops;
      total.cpuUs += reply.cpuUs;
    }
    return total;
  }

  stop(): void {
    for (const child of this.#children) if (child.connected) child.send({ exit: true } satisfies Command);
  }

  // Sends a command to each child (after subscribing for its answer) and waits for all answers.
  #each(send: (child: ChildProcess) => void): Promise<Reply[]> {
    return Promise.all(
      this.#children.map(
        (child) =>
          new Promise<Reply>((resolve, reject) => {
            const onExit = (code: number | null) => reject(new Error(`bench worker exited ${String(code)}`));
            child.once('exit', onExit);
            child.once('message', (reply: Reply) => {
              child.off('exit', onExit);
              resolve(reply);
            });
            send(child);
          }),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The parent

function medianOf(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
}

// redis-server's own CPU time (INFO cpu: user + system, main thread and helpers), in µs.
async function serverCpuReader(url: string) {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return {
    read: async () => {
      const info = await client.info('cpu');
      const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
      return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
    },
    close: () => client.destroy(),
  };
}

async function main(): Promise<void> {
  const seconds = flag('seconds', 1);
  const processes = flag('processes', 4);
  const concurrency = flag('concurrency', 64);
  const roundCount = flag('rounds', 9);
  const options = loadOptionsFromArgv(argv);
  const print = (result: RedisBenchResult) => console.log(JSON.stringify(result));

  const binary = redisBinary();
  if (!binary.available) {
    console.log(`Redis rows not measured: ${binary.reason}`);
    print({ measured: false, reason: binary.reason });
    process.exitCode = 2;
    return;
  }
  const { lib, redis: redisLib, origin } = await loadBoth(options);
  const library =
    origin === 'source'
      ? 'TypeScript source through tsx'
      : origin === 'path'
        ? `compiled entry point ${String(options.path)}`
        : 'tsc build (bench/.build)';
  // The workers load the library just compiled (or the one given) instead of compiling again.
  const libraryArgs =
    origin === 'path'
      ? ['--library', String(options.path)]
      : [origin === 'source' ? '--source' : '--prebuilt'];
  const server = await startRedisServer();
  let failed = false;
  let workers: Workers | undefined;
  try {
    console.log(`redis-server ${server.version} on ${server.url}, node-redis; library: ${library}\n`);
    console.log('round trips per dispatch path');
    const trips = await roundTrips(lib, redisLib, server.url);
    for (const row of trips) {
      const ok = row.trips <= row.budget;
      failed ||= !ok;
      console.log(
        `  ${row.path.padEnd(26)} ${row.trips.toFixed(2).padStart(5)}   (budget ${row.budget})${ok ? '' : '  OVER'}`,
      );
    }
    workers = await Workers.start(server.url, processes, Math.ceil(concurrency / processes), libraryArgs);
    const serverCpu = await serverCpuReader(server.url);
    const rounds: Round[] = [];
    for (let round = 0; round < roundCount; round++) {
      // The order alternates, so a drift in the machine's speed favours neither case.
      const order: Mode[] =
        round % 2 === 0
          ? ['bare', 'keyed', 'bareUntimed', 'bareEval', 'limited']
          : ['limited', 'bareEval', 'bareUntimed', 'keyed', 'bare'];
      const results: Partial<Record<Mode, CaseResult>> = {};
      for (const mode of order) {
        const serverBefore = await serverCpu.read();
        const { rate, ops, cpuUs } = await workers.run(mode, seconds * 1_000);
        const serverUs = (await serverCpu.read()) - serverBefore;
        results[mode] = { rate, clientCpuUs: cpuUs / ops, serverCpuUs: serverUs / ops };
      }
      const { bare, keyed, bareUntimed, limited, bareEval } = results as Record<Mode, CaseResult>;
      rounds.push({
        bare,
        keyed,
        bareUntimed,
        ratio: keyed.rate / bare.rate,
        ratioUntimed: keyed.rate / bareUntimed.rate,
        limited,
        bareEval,
        limitedRatio: limited.rate / bareEval.rate,
      });
    }
    serverCpu.close();
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)] as Round;
    const limitedMedian = [...rounds].sort((a, b) => a.limitedRatio - b.limitedRatio)[
      Math.floor(rounds.length / 2)
    ] as Round;
    failed ||= median.ratio < throughputTarget || limitedMedian.limitedRatio < throughputTarget;
    const line = (label: string, unit: string, result: CaseResult) =>
      console.log(
        `  ${label.padEnd(22)} ${Math.round(result.rate).toLocaleString('en').padStart(7)} ${unit.padEnd(13)}` +
          `CPU per op: client ${result.clientCpuUs.toFixed(0)} µs, redis-server ${result.serverCpuUs.toFixed(0)} µs`,
      );
    console.log(
      `\nthroughput at concurrency ${concurrency} across ${processes} processes, ${seconds} s per case, the median of ${rounds.length} interleaved rounds`,
    );
    const ratioUntimed = medianOf(rounds.map((round) => round.ratioUntimed));
    line('bare SET NX PX + GET', 'pairs/s', median.bare);
    line('keyed dispatch (miss)', 'dispatches/s', median.keyed);
    line('bare, no command timer', 'pairs/s', median.bareUntimed);
    console.log(
      `  keyed / bare           ${median.ratio.toFixed(2)}× (target ≥ ${throughputTarget}×; rounds ${rounds.map((r) => r.ratio.toFixed(2)).join(' ')})${median.ratio < throughputTarget ? '  MISSED' : ''}`,
    );
    console.log(
      `  keyed / bare, no timer ${ratioUntimed.toFixed(2)}× (reported; rounds ${rounds.map((r) => r.ratioUntimed.toFixed(2)).join(' ')})`,
    );
    line('bare acquire + reserve', 'pairs/s', limitedMedian.bareEval);
    line('rate + budget dispatch', 'dispatches/s', limitedMedian.limited);
    console.log(
      `  limited / bare pairs   ${limitedMedian.limitedRatio.toFixed(2)}× (target ≥ ${throughputTarget}×; rounds ${rounds.map((r) => r.limitedRatio.toFixed(2)).join(' ')})${limitedMedian.limitedRatio < throughputTarget ? '  MISSED' : ''}`,
    );
    print({
      measured: true,
      server: server.version,
      library,
      roundTrips: trips,
      throughput: { processes, concurrency, seconds, rounds, median, ratioUntimed, limitedMedian },
      target: throughputTarget,
    });
  } finally {
    workers?.stop();
    await server.stop();
  }
  if (failed) process.exitCode = 1;
}

if (argv[0] === '--worker') {
  await worker(argv[1] as string, Number(argv[2]), loadOptionsFromArgv(argv));
} else {
  await main();
}
