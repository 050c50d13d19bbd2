// The fleet test (`npm run test:fleet`): N worker processes with real dispatchers on the Redis
// stores dispatch the same keys in random orders while faults are injected; the invariants are
// checked from their logs and from Redis. Exits non-zero when one breaks.

import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisSlotStore } from '../../integrations/redis/index.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { connectIoredis, reconnected, type Connected } from '../integrations/redis/clients.js';
import { FaultProxy } from '../integrations/redis/fault-proxy.js';
import { runBrownoutFleet } from './brownout-scenario.js';
import { runExactlyOnce } from './exactly-once-scenario.js';
import { check, parseLog, type Entry } from './invariants.js';
import { runRateLimitFleet } from './rate-limit-scenario.js';
import type { WorkerConfig } from './worker.js';

const workers = Number(process.env.TD_FLEET_WORKERS ?? 4);
const keyCount = Number(process.env.TD_FLEET_KEYS ?? 200);
const leaseMs = 400;
const fleetMax = 6;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const workerPath = new URL('./worker.ts', import.meta.url).pathname;

type Scenario =
  | 'none'
  | 'latency'
  | 'kill'
  | 'stop'
  | 'partition'
  | 'wedge'
  | 'restart'
  | 'exactly-once'
  | 'rate-limit'
  | 'brownout';
const scenarios: Scenario[] = (process.env.TD_FLEET_SCENARIOS?.split(',') as Scenario[] | undefined) ?? [
  'none',
  'latency',
  'kill',
  'stop',
  'partition',
  'wedge',
  'restart',
  'exactly-once',
  'rate-limit',
  'brownout',
];
const rateLimitScenario = scenarios.includes('rate-limit');
const brownoutScenario = scenarios.includes('brownout');
// The scenarios with servers of their own: named alone, the shared fleet's checks are skipped.
const ownServerScenarios: readonly Scenario[] = ['rate-limit', 'brownout'];

interface Running {
  id: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  proxy: FaultProxy;
}

class Fleet {
  readonly running: Running[] = [];
  readonly killed = new Set<string>();
  readonly logPath: string;
  seq = 0;

  constructor(
    readonly dir: string,
    readonly server: RedisServer,
    readonly proxies: FaultProxy[],
    readonly base: Omit<WorkerConfig, 'id' | 'url' | 'client' | 'seed' | 'logPath'>,
  ) {
    this.logPath = join(dir, `${base.prefix}.log`);
    writeFileSync(this.logPath, '');
  }

  spawn(overrides: Partial<WorkerConfig> = {}): Running {
    const index = this.seq++;
    const proxy = this.proxies[index % this.proxies.length] as FaultProxy;
    const id = `w${index}`;
    const config: WorkerConfig = {
      ...this.base,
      id,
      url: proxy.url,
      client: index % 2 === 0 ? 'node-redis' : 'ioredis',
      seed: 1000 + index,
      logPath: this.logPath,
      ...overrides,
    };
    const child = fork(workerPath, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, TD_FLEET_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const running = { id, child, exited, proxy };
    this.running.push(running);
    return running;
  }

  /** Marks a fault in the log, for whoever reads it after a failure. */
  mark(what: string): void {
    appendFileSync(
      this.logPath,
      `FAULT - ${what} runner ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`,
    );
  }

  entries(): Entry[] {
    return parseLog(readFileSync(this.logPath, 'utf8'));
  }

  /** Workers with an execution started and not ended: leaders mid-call. */
  leaders(): Running[] {
    const open = new Map<string, number>();
    for (const e of this.entries()) {
      if (e.type === 'S') open.set(e.value, e.worker === undefined ? 0 : 1);
      if (e.type === 'E') open.delete(e.value);
    }
    const busy = new Set(
      this.entries()
        .filter((e) => e.type === 'S' && open.has(e.value))
        .map((e) => e.worker),
    );
    return this.running.filter((r) => busy.has(r.id) && !this.killed.has(r.id) && r.child.exitCode === null);
  }

  async finish(timeoutMs: number): Promise<string[]> {
    const hung: string[] = [];
    await Promise.all(
      this.running.map(async (r) => {
        const timer = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), timeoutMs).unref());
        if ((await Promise.race([r.exited, timer])) === 'hung') {
          hung.push(r.id);
          r.child.kill('SIGKILL');
        }
      }),
    );
    return hung;
  }
}

async function waitForLeaders(fleet: Fleet): Promise<Fleet['running']> {
  for (let i = 0; i < 200; i++) {
    const leaders = fleet.leaders();
    if (leaders.length > 0) return leaders;
    await sleep(5);
  }
  return [];
}

async function runKeys(
  server: RedisServer,
  proxies: FaultProxy[],
  dir: string,
  scenario: Scenario,
  sampler: Connected,
) {
  const prefix = `fleet-${scenario}-${randomUUID().slice(0, 8)}`;
  const restart = scenario === 'restart';
  const ttlMs = restart ? 3_000 : 60_000;
  const keys = Array.from({ length: keyCount }, (_, i) => `order-${i}`);
  const fleet = new Fleet(dir, server, proxies, {
    prefix,
    phase: 'keys',
    keys,
    concurrency: 8,
    leaseMs,
    ttlMs,
    resetWindowMs: ttlMs,
    storeTimeoutMs: 300,
    fleetMax,
  });
  const slots = redisSlotStore(sampler.store, {
    prefix,
    pool: 'payments',
    max: fleetMax,
    storeTimeoutMs: 300,
  });
  let maxLeases = 0;
  let sampling = true;
  const samples = (async () => {
    while (sampling) {
      try {
        maxLeases = Math.max(maxLeases, (await slots.load()).running);
      } catch {
        // Redis is down in the restart scenario.
      }
      await sleep(2);
    }
  })();

  const startedAt = performance.timeOrigin + performance.now();
  for (let i = 0; i < workers; i++) fleet.spawn();
  let resetAt: number | undefined;
  let note = '';
  const openOf = (victim: Running) => {
    const entries = fleet.entries();
    const ended = new Set(entries.filter((e) => e.type === 'E').map((e) => e.value));
    return entries.filter((e) => e.type === 'S' && e.worker === victim.id && !ended.has(e.value)).length;
  };
  // Workers take a moment to start: faults go in once executions are under way.
  for (let i = 0; i < 2_000 && fleet.entries().filter((e) => e.type === 'E').length < 20; i++) await sleep(5);
  switch (scenario) {
    case 'latency':
      for (const proxy of proxies) proxy.set({ kind: 'delay', ms: 30 });
      await sleep(1_000);
      for (const proxy of proxies) proxy.set({ kind: 'pass' });
      break;
    case 'kill':
      for (let round = 0; round < 2; round++) {
        const [victim] = await waitForLeaders(fleet);
        if (victim !== undefined) {
          note += `killed ${victim.id} mid ${openOf(victim)} executions; `;
          fleet.killed.add(victim.id);
          victim.child.kill('SIGKILL');
          fleet.spawn();
        }
        await sleep(200);
      }
      break;
    case 'stop': {
      const [victim] = await waitForLeaders(fleet);
      if (victim !== undefined) {
        note = `stopped ${victim.id} mid ${openOf(victim)} executions; `;
        victim.child.kill('SIGSTOP');
        await sleep(4 * leaseMs);
        victim.child.kill('SIGCONT');
      }
      break;
    }
    case 'partition':
    case 'wedge': {
      const [victim] = await waitForLeaders(fleet);
      if (victim !== undefined) {
        note = `cut off ${victim.id} mid ${openOf(victim)} executions; `;
        victim.proxy.set(scenario === 'partition' ? { kind: 'hold' } : { kind: 'drop' });
        fleet.mark(`${scenario}-start ${victim.id}`);
        await sleep(3 * leaseMs);
        victim.proxy.set({ kind: 'pass' });
        fleet.mark(`${scenario}-end ${victim.id}`);
      }
      break;
    }
    case 'restart':
      note = `restarted after ${fleet.entries().filter((e) => e.type === 'E').length} executions; `;
      await server.kill();
      // Workers take a moment to start: faults go in once executions are under way.
      for (let i = 0; i < 2_000 && fleet.entries().filter((e) => e.type === 'E').length < 20; i++)
        await sleep(5);
      await server.restart();
      resetAt = performance.timeOrigin + performance.now();
      await reconnected(sampler);
      break;
    case 'none':
      break;
  }
  const hung = await fleet.finish(60_000);
  sampling = false;
  await samples;
  const survivors = fleet.running.filter((r) => !fleet.killed.has(r.id)).map((r) => r.id);
  const verdict = check(fleet.entries(), {
    keys,
    killed: fleet.killed,
    survivors,
    ttlMs,
    leaseMs,
    fleetMax,
    ...(resetAt === undefined ? {} : { reset: { at: resetAt, windowMs: ttlMs } }),
    strictCap: scenario === 'none' || scenario === 'latency',
  });
  if (hung.length > 0) verdict.problems.push(`hung workers: ${hung.join(', ')}`);
  if (maxLeases > fleetMax)
    verdict.problems.push(`Redis held ${maxLeases} slot leases, over the cap of ${fleetMax}`);
  const crashed = fleet.entries().filter((e) => e.type === 'CRASH');
  for (const crash of crashed) verdict.problems.push(`${crash.worker} crashed: ${crash.value.slice(0, 300)}`);
  const seconds = ((performance.timeOrigin + performance.now() - startedAt) / 1000).toFixed(1);
  const { extra } = verdict;
  console.log(
    `${scenario.padEnd(9)} ${note}executions ${verdict.executions}/${keyCount}; extra crash ${extra.crash}, lease lost ${extra.leaseLost}, ` +
      `ttl ${extra.ttl}, after reset window ${extra.reset}, unexplained ${extra.unexplained}; split ${verdict.split} ` +
      `(unexplained ${verdict.splitUnexplained}); missing ${verdict.missing}; failures ${JSON.stringify(verdict.failures)}; ` +
      `max leases ${maxLeases}/${fleetMax}; slot leases lapsed mid-run ${verdict.slotLost}; ${seconds} s`,
  );
  return verdict.problems;
}

async function runBudget(server: RedisServer, proxies: FaultProxy[], dir: string): Promise<string[]> {
  const prefix = `fleet-budget-${randomUUID().slice(0, 8)}`;
  const limit = 50;
  const fleet = new Fleet(dir, server, proxies, {
    prefix,
    phase: 'budget',
    keys: [],
    concurrency: 4,
    leaseMs,
    ttlMs: 60_000,
    resetWindowMs: 60_000,
    storeTimeoutMs: 300,
    fleetMax,
    budgetId: 'run-1',
    budgetLimit: limit,
    budgetCalls: 30,
  });
  for (let i = 0; i < workers; i++) fleet.spawn();
  const hung = await fleet.finish(30_000);
  const entries = fleet.entries();
  const spent = entries.filter((e) => e.type === 'B').length;
  const refused = entries.filter((e) => e.type === 'U' && e.value === 'budget_exceeded').length;
  console.log(
    `budget    ${spent} attempts ran of a budget of ${limit} (${refused} refused) across ${workers} workers`,
  );
  const problems = spent > limit ? [`the budget was overspent: ${spent} > ${limit}`] : [];
  if (spent < limit) problems.push(`only ${spent} of ${limit} units were used though more calls were made`);
  if (hung.length > 0) problems.push(`hung workers: ${hung.join(', ')}`);
  return problems;
}

async function runBreaker(
  server: RedisServer,
  proxies: FaultProxy[],
  dir: string,
  sampler: Connected,
): Promise<string[]> {
  const prefix = `fleet-breaker-${randomUUID().slice(0, 8)}`;
  const fleet = new Fleet(dir, server, proxies, {
    prefix,
    phase: 'breaker',
    keys: [],
    concurrency: 1,
    leaseMs,
    ttlMs: 60_000,
    resetWindowMs: 60_000,
    storeTimeoutMs: 300,
    fleetMax,
  });
  for (let i = 0; i < workers; i++) fleet.spawn();
  const { readCircuitScript } = await import('../../integrations/redis/scripts.js');
  let openedAt: number | undefined;
  for (let i = 0; i < 5_000 && openedAt === undefined; i++) {
    const reply = (await sampler.store.evalScript(
      readCircuitScript,
      [`${prefix}:b:flaky.backend`, `${prefix}:bf:flaky.backend`],
      [],
    )) as unknown[];
    if (reply[2] === 'open') openedAt = performance.timeOrigin + performance.now();
    else await sleep(1);
  }
  const problems: string[] = [];
  if (openedAt === undefined) problems.push('the circuit never opened');
  await sleep(50);
  const checkedAt = performance.timeOrigin + performance.now();
  for (const r of fleet.running) r.child.send('check');
  await Promise.all(fleet.running.map((r) => new Promise((resolve) => r.child.once('message', resolve))));
  for (const r of fleet.running) r.child.send('exit');
  await fleet.finish(10_000);
  const entries = fleet.entries();
  const checks = entries.filter((e) => e.type === 'C');
  // The breaker admits a call once and its retries run inside it: a retry of a call admitted
  // before the circuit opened is not a call let through, so only first attempts count.
  const late = entries.filter((e) => e.type === 'X' && e.value === '1' && e.at > checkedAt);
  const rejected = checks.filter((e) => e.value === 'circuit_open').length;
  console.log(
    `breaker   opened; ${rejected}/${workers} workers rejected a call 50 ms later; ${late.length} executions after that`,
  );
  if (rejected !== workers)
    problems.push(
      `only ${rejected} of ${workers} workers rejected within 50 ms: ${checks.map((e) => e.value).join(', ')}`,
    );
  if (late.length > 0) problems.push(`${late.length} calls of the open circuit's tool started after 50 ms`);
  return problems;
}

async function main(): Promise<void> {
  if (!redisSuitesEnabled('fleet')) return;
  const server = await startRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'td-fleet-'));
  const proxies = await Promise.all(
    Array.from({ length: workers + 2 }, () => FaultProxy.start(server.host, server.port)),
  );
  const sampler = await connectIoredis(server.url, { subscriber: false });
  console.log(
    `fleet: ${workers} workers, ${keyCount} keys each, lease ${leaseMs} ms, fleet cap ${fleetMax}, redis-server ${server.version}`,
  );
  const problems: string[] = [];
  try {
    for (const scenario of scenarios.filter((name) => !ownServerScenarios.includes(name))) {
      const run =
        scenario === 'exactly-once'
          ? runExactlyOnce(server, dir, () => reconnected(sampler))
          : runKeys(server, proxies, dir, scenario, sampler);
      for (const problem of await run) problems.push(`${scenario}: ${problem}`);
    }
    if (!scenarios.every((name) => ownServerScenarios.includes(name))) {
      for (const problem of await runBudget(server, proxies, dir)) problems.push(`budget: ${problem}`);
      for (const problem of await runBreaker(server, proxies, dir, sampler))
        problems.push(`breaker: ${problem}`);
    }
    if (brownoutScenario)
      for (const problem of await runBrownoutFleet()) problems.push(`brownout: ${problem}`);
    if (rateLimitScenario)
      for (const problem of await runRateLimitFleet()) problems.push(`rate-limit: ${problem}`);
  } finally {
    await sampler.close();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await server.stop();
    if (problems.length === 0) rmSync(dir, { recursive: true, force: true });
  }
  if (problems.length > 0) {
    console.error(`\n${problems.length} invariant(s) broken (logs in ${dir}):`);
    for (const problem of problems.slice(0, 40)) console.error(`  - ${problem}`);
    process.exitCode = 1;
  } else {
    console.log('fleet: every invariant holds');
  }
}

await main();
