// The cost of `tool-dispatcher mcp-proxy` on the v2 MCP packages, each against a bare v2
// pass-through proxy measured in the same run: tools/call round trips over stdio with the client
// pinned to 2026-07-28 (an instant tool and one that takes 10 ms), throughput of `--listen` over
// Streamable HTTP with 16 concurrent clients, and the Tasks path (create + first tasks/get on the
// memory store, then on Redis) against one synchronous call.
//
//   npx tsx bench/mcp-proxy.ts            prints the medians and the ratios
//   npx tsx bench/mcp-proxy.ts --check    also exits 1 when a ratio misses its target
//   --json                                also prints the results as JSON, as the last line (run.ts reads it)
//   --prebuilt                            reuses bench/.build instead of compiling it again
//   --dist                                runs dist/integrations/mcp/cli.js (npm run build first)
//   --source                              runs integrations/mcp/cli.ts through tsx
//   --tasks-only                          only the Tasks cases (no proxy build, no proxy processes)
//
// Targets (issue 23): over stdio, the instant tool's round trip through the proxy at most 1.25×
// the bare pass-through's and the 10 ms tool's at most 1.05×; over HTTP, the proxy's throughput
// at least 0.8× the bare pass-through's; a task's create + first tasks/get at most 2× one
// synchronous call on the memory store. On a `redisIdempotencyStore` (a redis-server of the
// bench's own, stopped at the end, node-redis with a subscriber as the docs configure it; reported
// as not measured when none is installed), as issue 31 restates it: at most 2 store round trips on
// the critical path, (Redis path − memory path) at most 2.5 in-path round trips, and at most 4× a
// synchronous call as a guard (each round trip costs a process wake-up, which on a small VM alone
// puts the path above 3×).
//
// The proxy runs as users run it: compiled JavaScript (tsc into bench/.build, as library.ts
// builds it). All sides are real processes. The upstream is a v2 `Server` with one tool, `wait`,
// served by `serveStdio` (both revisions). The floor, the bare pass-through, is this file re-run as
// a v2 `Client` (`versionNegotiation: auto`) to the upstream, re-served by a v2 low-level `Server`
// (the one `McpServer` wraps) whose handlers only forward tools/list and await
// `client.callTool(params)`: what any MCP-in-MCP proxy costs; over HTTP it is served by the same
// listener as the proxy's `--listen`. Within a round the sides take turns call by call; each ratio
// is the median over rounds of the ratio of the sides' per-round medians, so drift in the machine's
// speed hits both alike.

import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import {
  Client,
  InMemoryTransport,
  StreamableHTTPClientTransport,
  type CallToolResult,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { McpTasksOptions } from '../integrations/mcp/index.js';
import type { StoreClient } from '../integrations/redis/index.js';
import { summarize, type Ratio } from './harness.js';
import { buildDir, buildLibrary } from './library.js';
import { formatTrips } from './report.js';

/** The Tasks targets: the memory row keeps issue 23's 2×, the Redis row is issue 31's. */
const taskTargets = { memoryVsSync: 2, redisTrips: 2, redisOverMemoryInTrips: 2.5, redisVsSync: 4 } as const;

const upstreamFlag = '--upstream-child';
const passThroughFlag = '--pass-through-child';
const pinned = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

if (process.argv[2] === upstreamFlag) await upstreamChild();
else if (process.argv[2] === passThroughFlag) await passThroughChild(process.argv.slice(3));
else await main();

/** One stdio case of the run: the median round trip of each side and the ratios, per-round paired. */
export interface McpProxyCaseResult {
  name: string;
  /** How long the upstream tool waits, in ms. */
  toolMs: number;
  rounds: number;
  /** Medians over all round trips, in ms. */
  directMs: number;
  proxyMs: number;
  floorMs: number;
  /** Median (and quartiles) over rounds of proxy / bare pass-through. */
  proxyVsFloor: Ratio;
  /** Median (and quartiles) over rounds of proxy / direct. */
  proxyVsDirect: Ratio;
  /** Median (and quartiles) over rounds of bare pass-through / direct. */
  floorVsDirect: Ratio;
  /** The ratio the target is on, and the target. */
  against: 'floor' | 'direct';
  target: number;
  met: boolean;
}

/** The `--listen` case: calls per second with 16 concurrent HTTP clients. */
export interface McpProxyHttpResult {
  clients: number;
  rounds: number;
  /** Median calls per second over rounds. */
  proxyPerSecond: number;
  floorPerSecond: number;
  /** Median (and quartiles) over rounds of proxy / bare pass-through throughput. */
  proxyVsFloor: Ratio;
  /** At least this ratio. */
  target: number;
  met: boolean;
}

/** One Tasks case: create + first tasks/get against one synchronous call, same server and store. */
export interface McpProxyTaskRow {
  /** The task store: 'memory' or 'Redis'. */
  store: string;
  rounds: number;
  /** Medians, in ms. */
  syncMs: number;
  taskMs: number;
  /** Median (and quartiles) over rounds of (create + first get) / synchronous call. */
  taskVsSync: Ratio;
  target: number;
  met: boolean;
}

/**
 * The Tasks case on a `redisIdempotencyStore` (issue 31): its `taskVsSync` is a guard (≤ 4×), and
 * what it adds is judged in store round trips, counted and timed in the same run.
 */
export interface McpProxyRedisTaskRow extends McpProxyTaskRow {
  /** Store round trips create + first tasks/get wait on one after another (the most over 10 tasks). */
  criticalTrips: number;
  /** At most this many. */
  tripsTarget: number;
  /**
   * Median of one in-path round trip, in ms: each timed task's store round trips on its critical
   * path as they took place there (a request's trips sent together count as one, lasting until the
   * last answer), their time over their count.
   */
  tripMs: number;
  /** Median of one `peek` of a task key on the same store timed alone, in ms (reported). */
  peekMs: number;
  /** Per round, (create + get on Redis − the same on the memory store) / one in-path round trip. */
  overMemoryInTrips: Ratio;
  /** At most this many round trips. */
  overMemoryTarget: number;
}

/** The Tasks cases: the memory store's row, and the Redis store's when measured. */
export interface McpProxyTaskResult extends McpProxyTaskRow {
  /** The Redis row's figures in a line, or why they were not measured. */
  redis: string;
  /** The same case on a `redisIdempotencyStore` (a redis-server of the bench's own). */
  onRedis?: McpProxyRedisTaskRow;
}

/** What `tasks.store` of `createMcpServerFactory` takes. */
type TaskStoreOption = NonNullable<McpTasksOptions['store']>;

/** What `--json` prints as its last line. */
export interface McpProxyBenchResult {
  origin: string;
  cases: McpProxyCaseResult[];
  http?: McpProxyHttpResult;
  tasks?: McpProxyTaskResult;
}

// The upstream: one tool that waits `ms` and answers, served on both revisions over stdio.
async function upstreamChild(): Promise<void> {
  serveStdio(() => {
    const server = new Server({ name: 'bench-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => ({
      tools: [
        {
          name: 'wait',
          inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
          annotations: { readOnlyHint: true },
        },
      ],
    }));
    server.setRequestHandler('tools/call', async (request) => {
      const ms = Number((request.params.arguments as { ms?: unknown } | undefined)?.ms ?? 0);
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: 'text', text: 'ok' }] };
    });
    return server;
  });
  process.stdin.once('end', () => process.exit(0));
}

// The floor: a v2 Client to the upstream re-served by a v2 Server, on stdio or (--listen) HTTP.
async function passThroughChild(argv: string[]): Promise<void> {
  const listen = argv[0] === '--listen';
  const [command = '', ...args] = listen ? argv.slice(1) : argv;
  const upstream = new Client(
    { name: 'pass-through', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await upstream.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  const factory = () => {
    const server = new Server({ name: 'pass-through', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => upstream.listTools());
    server.setRequestHandler('tools/call', (request) => upstream.callTool(request.params));
    return server;
  };
  if (!listen) {
    serveStdio(factory);
    process.stdin.once('end', () => process.exit(0));
    return;
  }
  const { listenMcp } = await import('../integrations/mcp/listener.js');
  const listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
  process.stderr.write(`pass-through listening on ${listener.url}\n`);
  process.once('SIGTERM', () => process.exit(0));
}

async function main(): Promise<void> {
  if (process.argv.includes('--tasks-only')) {
    const tasks = await taskCases(process.argv.includes('--quick'));
    const report: McpProxyBenchResult = { origin: 'Tasks cases only', cases: [], tasks };
    if (process.argv.includes('--json')) console.log(JSON.stringify(report));
    const missed = !tasks.met || tasks.onRedis?.met === false;
    if (missed && process.argv.includes('--check')) process.exitCode = 1;
    return;
  }
  const root = fileURLToPath(new URL('..', import.meta.url));
  const self = fileURLToPath(import.meta.url);
  const upstream = [process.execPath, '--import', 'tsx', self, upstreamFlag];
  const { entry, origin } = proxyEntry(root);
  const proxyCommand = [process.execPath, ...entry, 'mcp-proxy', '--log-level', 'silent'];
  const floorCommand = [process.execPath, '--import', 'tsx', self, passThroughFlag];
  const quick = process.argv.includes('--quick');

  console.log(`MCP proxy on the v2 packages (${origin}, Node ${process.version})\n`);
  const cases = await stdioCases(
    [...proxyCommand, '--', ...upstream],
    [...floorCommand, ...upstream],
    upstream,
    quick,
  );
  const http = await httpCase(
    [...proxyCommand, '--listen', 'http://127.0.0.1:0/mcp', '--', ...upstream],
    [...floorCommand, '--listen', ...upstream],
    quick,
  );
  const tasks = await taskCases(quick);
  const report: McpProxyBenchResult = { origin, cases, http, tasks };
  if (process.argv.includes('--json')) console.log(JSON.stringify(report));
  const missed = cases.some((c) => !c.met) || !http.met || !tasks.met || tasks.onRedis?.met === false;
  if (missed && process.argv.includes('--check')) process.exitCode = 1;
}

async function stdioCases(
  proxy: string[],
  floor: string[],
  upstream: string[],
  quick: boolean,
): Promise<McpProxyCaseResult[]> {
  const sideNames = ['direct', 'proxy', 'floor'] as const;
  const cases = [
    { name: 'instant tool', ms: 0, rounds: quick ? 8 : 40, perRound: 25, target: 1.25 },
    { name: '10 ms tool', ms: 10, rounds: quick ? 5 : 20, perRound: 10, target: 1.05 },
  ] as const;
  const sides = {
    direct: await connectStdio(upstream),
    proxy: await connectStdio(proxy),
    floor: await connectStdio(floor),
  };
  const results: McpProxyCaseResult[] = [];
  try {
    console.log('stdio, client pinned to 2026-07-28: median tools/call round trip');
    for (const { name, ms, rounds, perRound, target } of cases) {
      const all = { direct: [] as number[], proxy: [] as number[], floor: [] as number[] };
      const perRoundMedians = { direct: [] as number[], proxy: [] as number[], floor: [] as number[] };
      for (const side of sideNames) await roundTrips(sides[side], ms, perRound * 2, []);
      for (let round = 0; round < rounds; round++) {
        const times = { direct: [] as number[], proxy: [] as number[], floor: [] as number[] };
        for (let call = 0; call < perRound; call++) {
          for (let turn = 0; turn < sideNames.length; turn++) {
            const side = sideNames[(call + turn) % sideNames.length] ?? 'direct';
            await roundTrips(sides[side], ms, 1, times[side]);
          }
        }
        for (const side of sideNames) {
          all[side].push(...times[side]);
          perRoundMedians[side].push(median(times[side]));
        }
      }
      const proxyVsFloor = paired(perRoundMedians.proxy, perRoundMedians.floor);
      const proxyVsDirect = paired(perRoundMedians.proxy, perRoundMedians.direct);
      const floorVsDirect = paired(perRoundMedians.floor, perRoundMedians.direct);
      const met = proxyVsFloor.median <= target;
      results.push({
        name,
        toolMs: ms,
        rounds,
        directMs: median(all.direct),
        proxyMs: median(all.proxy),
        floorMs: median(all.floor),
        proxyVsFloor,
        proxyVsDirect,
        floorVsDirect,
        against: 'floor',
        target,
        met,
      });
      console.log(
        `${name}: direct ${ms3(median(all.direct))}, proxy ${ms3(median(all.proxy))}, ` +
          `bare v2 pass-through ${ms3(median(all.floor))}`,
      );
      console.log(
        `   proxy / bare pass-through: ${r(proxyVsFloor)}   (target ≤ ${target}×, ${met ? 'ok' : 'MISSED'})`,
      );
      console.log(`   proxy / direct:            ${r(proxyVsDirect)}`);
      console.log(`   bare pass-through / direct: ${r(floorVsDirect)}`);
    }
  } finally {
    await Promise.all(Object.values(sides).map((client) => client.close()));
  }
  return results;
}

async function httpCase(proxy: string[], floor: string[], quick: boolean): Promise<McpProxyHttpResult> {
  const clients = 16;
  const perClient = 20;
  const rounds = quick ? 3 : 10;
  const target = 0.8;
  const proxyProcess = await startListening(proxy);
  const floorProcess = await startListening(floor);
  const sides = {
    proxy: await Promise.all(Array.from({ length: clients }, () => connectHttp(proxyProcess.url))),
    floor: await Promise.all(Array.from({ length: clients }, () => connectHttp(floorProcess.url))),
  };
  try {
    const burst = async (side: Client[]) => {
      const start = performance.now();
      await Promise.all(side.map((client) => roundTrips(client, 0, perClient, [])));
      return (clients * perClient) / ((performance.now() - start) / 1000);
    };
    await burst(sides.proxy);
    await burst(sides.floor);
    const rates = { proxy: [] as number[], floor: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['proxy', 'floor'] as const) : (['floor', 'proxy'] as const);
      for (const side of order) rates[side].push(await burst(sides[side]));
    }
    const proxyVsFloor = paired(rates.proxy, rates.floor);
    const met = proxyVsFloor.median >= target;
    console.log(
      `\n--listen over Streamable HTTP, ${clients} concurrent clients, instant tool: ` +
        `proxy ${median(rates.proxy).toFixed(0)} calls/s, bare v2 pass-through ${median(rates.floor).toFixed(0)} calls/s`,
    );
    console.log(
      `   proxy / bare pass-through throughput: ${r(proxyVsFloor)}   (target ≥ ${target}×, ${met ? 'ok' : 'MISSED'})`,
    );
    return {
      clients,
      rounds,
      proxyPerSecond: median(rates.proxy),
      floorPerSecond: median(rates.floor),
      proxyVsFloor,
      target,
      met,
    };
  } finally {
    await Promise.all([...sides.proxy, ...sides.floor].map((client) => client.close().catch(() => {})));
    for (const child of [proxyProcess.child, floorProcess.child]) child.kill('SIGTERM');
  }
}

// The Tasks path on the memory store and (when a redis-server is installed) on one of the bench's
// own, both servers measured in the same rounds: a synchronous call and a task's create + first
// tasks/get on each, the Redis task's store round trips timed as they happen, and a `peek` alone.
// The Redis row then says what the Redis store adds: its round trips on the critical path, counted
// first, and (Redis path − memory path) in those round trips.
async function taskCases(quick: boolean): Promise<McpProxyTaskResult> {
  const { memoryTaskStore } = await import('../integrations/mcp/index.js');
  const memory = await taskServer(memoryTaskStore());
  const { redisBinary, startRedisServer } = await import('../test/helpers/redis-server.js');
  const binary = redisBinary();
  if (!binary.available) {
    try {
      const { memoryRow } = await measureTasks(quick, memory, undefined);
      const redis = `not measured: ${binary.reason}`;
      console.log(`\nTasks, Redis store: ${redis}`);
      return { ...memoryRow, redis };
    } finally {
      await memory.close();
    }
  }
  const { redisIdempotencyStore } = await import('../integrations/redis/index.js');
  const { connectNodeRedis } = await import('../test/integrations/redis/clients.js');
  const starting = startRedisServer();
  // A bench stopped from outside (run.ts's timeout, ^C) leaves no redis-server behind.
  const stopServer = (signal: NodeJS.Signals) => {
    void starting.then((started) => started.stop()).finally(() => process.kill(process.pid, signal));
  };
  process.once('SIGTERM', stopServer);
  process.once('SIGINT', stopServer);
  const server = await starting;
  try {
    const connected = await connectNodeRedis(server.url);
    const timing = timingClient(connected.store);
    const store = redisIdempotencyStore(timing, { prefix: 'bench-tasks' });
    const onRedis = await taskServer(store);
    try {
      const counted = await criticalTrips(onRedis, timing);
      const { peek } = store;
      if (peek === undefined) throw new Error('redisIdempotencyStore has no peek');
      const tripKey = `mcp-task:${counted.taskId}`;
      const peekAlone = async () => {
        const start = performance.now();
        const seen = await peek.call(store, tripKey, 'mcp-task');
        if (seen.kind !== 'hit') throw new Error(`a peek of a task key read ${seen.kind}`);
        return performance.now() - start;
      };
      const { memoryRow, redisRow } = await measureTasks(quick, memory, {
        side: onRedis,
        timing,
        peekAlone,
        counted,
      });
      if (redisRow === undefined) throw new Error('the Redis side was not measured');
      return {
        ...memoryRow,
        redis:
          `${redisRow.criticalTrips} round trips, ${formatTrips(redisRow.overMemoryInTrips)} over the memory path, ` +
          `${r(redisRow.taskVsSync)} a call`,
        onRedis: redisRow,
      };
    } finally {
      await onRedis.close();
      store.close();
      await connected.close();
    }
  } finally {
    await memory.close();
    process.off('SIGTERM', stopServer);
    process.off('SIGINT', stopServer);
    await server.stop();
  }
}

/** One server of the Tasks cases: timed operations on it, and a task whose run waits to be let go. */
interface TaskServer {
  /** One synchronous tools/call, in ms. */
  sync(): Promise<number>;
  /** A task's create + first tasks/get: in all, in ms, and when each request began and ended. */
  task(): Promise<{ ms: number; create: Span; get: Span }>;
  /** Creates a task whose run waits, reads it once, and says when each request began and ended. */
  heldTask(): Promise<{ taskId: string; create: Span; get: Span; release(): Promise<void> }>;
  close(): Promise<void>;
}

interface Span {
  start: number;
  end: number;
}

// Our own server (createMcpServerFactory) in this process, in memory, its tasks kept in `store`.
async function taskServer(store: TaskStoreOption): Promise<TaskServer> {
  const { z } = await import('zod');
  const { createDispatcher, defaultStack, ToolRegistry } = await import('../index.js');
  const { createMcpServerFactory } = await import('../integrations/mcp/index.js');
  const { RawRequests } = await import('../integrations/mcp/raw-requests.js');
  const held: Array<() => void> = [];
  const registry = new ToolRegistry()
    .register({ name: 'wait', inputSchema: z.object({}), handler: () => 'ok' })
    .register({ name: 'wait_task', inputSchema: z.object({}), task: true, handler: () => 'ok' })
    .register({
      name: 'held_task',
      inputSchema: z.object({}),
      task: true,
      handler: () => new Promise<string>((resolve) => held.push(() => resolve('ok'))),
    });
  const factory = createMcpServerFactory({
    registry,
    dispatcher: createDispatcher(defaultStack({ registry })),
    info: { name: 'bench-tasks', version: '1.0.0' },
    tasks: { store },
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const served = serveStdio(factory, { transport: serverSide });
  const client = new Client({ name: 'bench', version: '1.0.0' }, pinned);
  await client.connect(clientSide);
  const channel = RawRequests.of(client);
  const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const signal = new AbortController().signal;
  const create = async (name: string) => {
    const handle = await channel.request('tools/call', { name, arguments: {} }, signal, capabilities);
    if (handle['resultType'] !== 'task') throw new Error(`${name} answered without a task handle`);
    return String(handle['taskId']);
  };
  const read = (taskId: string) => channel.request('tasks/get', { taskId }, signal, capabilities);
  return {
    async sync() {
      const start = performance.now();
      await client.callTool({ name: 'wait', arguments: {} });
      return performance.now() - start;
    },
    async task() {
      const start = performance.now();
      const taskId = await create('wait_task');
      const getStart = performance.now();
      await read(taskId);
      const end = performance.now();
      return { ms: end - start, create: { start, end: getStart }, get: { start: getStart, end } };
    },
    async heldTask() {
      const createStart = performance.now();
      const taskId = await create('held_task');
      const getStart = performance.now();
      const seen = await read(taskId);
      const getEnd = performance.now();
      if (seen['status'] !== 'working') throw new Error(`a held task read as ${String(seen['status'])}`);
      return {
        taskId,
        create: { start: createStart, end: getStart },
        get: { start: getStart, end: getEnd },
        async release() {
          for (const letGo of held.splice(0)) letGo();
          // Settled before the next count begins, so its write falls in no counted request.
          for (let polls = 0; (await read(taskId))['status'] === 'working'; polls++) {
            if (polls > 1_000) throw new Error('a released task never settled');
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        },
      };
    },
    async close() {
      await client.close();
      await served.close();
    },
  };
}

/** A StoreClient that, while `recording`, keeps when each round trip (script run) began and ended. */
interface TimingClient extends StoreClient {
  recording: boolean;
  readonly spans: Span[];
}

function timingClient(inner: StoreClient): TimingClient {
  const client: TimingClient = {
    recording: false,
    spans: [],
    evalScript(script, keys, args) {
      if (!client.recording) return inner.evalScript(script, keys, args);
      const start = performance.now();
      return inner.evalScript(script, keys, args).then((answer) => {
        client.spans.push({ start, end: performance.now() });
        return answer;
      });
    },
  };
  if (inner.subscribe !== undefined) client.subscribe = inner.subscribe.bind(inner);
  if (inner.stalled !== undefined) client.stalled = inner.stalled.bind(inner);
  return client;
}

// The store round trips a task's create + first tasks/get wait on one after another: in each
// request, the longest chain of round trips each begun after the one before it ended (two sent
// together, as tasks/get's two reads are, are one). The run is held until both are answered, so
// its settle is not counted; the most over a few tasks.
async function criticalTrips(
  side: TaskServer,
  timing: TimingClient,
): Promise<{ trips: number; taskId: string }> {
  let most = 0;
  let taskId = '';
  for (let i = 0; i < 10; i++) {
    timing.spans.length = 0;
    timing.recording = true;
    const held = await side.heldTask();
    timing.recording = false;
    most = Math.max(most, chainIn(timing.spans, held.create) + chainIn(timing.spans, held.get));
    taskId = held.taskId;
    await held.release();
  }
  return { trips: most, taskId };
}

// A small deterministic PRNG, so a run's orders can be reproduced.
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function shuffled(items: readonly string[], random: () => number): string[] {
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const item = order[i] as string;
    order[i] = order[j] as string;
    order[j] = item;
  }
  return order;
}

function chainIn(spans: readonly Span[], within: Span): number {
  const inside = spans
    .filter((span) => span.start >= within.start && span.end <= within.end)
    .sort((a, b) => a.end - b.end);
  let count = 0;
  let free = Number.NEGATIVE_INFINITY;
  for (const span of inside) {
    if (span.start < free) continue;
    count += 1;
    free = span.end;
  }
  return count;
}

// How long a request's round trips on its critical path took, and how many they were: the time
// from the first sent to the last answered, over the chain's length (0 when it made none).
function tripsIn(spans: readonly Span[], within: Span): { ms: number; count: number } {
  const inside = spans.filter((span) => span.start >= within.start && span.end <= within.end);
  if (inside.length === 0) return { ms: 0, count: 0 };
  const first = Math.min(...inside.map((span) => span.start));
  const last = Math.max(...inside.map((span) => span.end));
  return { ms: last - first, count: chainIn(inside, within) };
}

// The timed rounds: within a round the operations take turns call by call, in an order shuffled
// each time (a fixed order would always time one just after another's idle wait on Redis); each
// ratio is the median over rounds of a ratio of per-round medians.
async function measureTasks(
  quick: boolean,
  memory: TaskServer,
  redis:
    | { side: TaskServer; timing: TimingClient; peekAlone: () => Promise<number>; counted: { trips: number } }
    | undefined,
): Promise<{ memoryRow: McpProxyTaskRow; redisRow?: McpProxyRedisTaskRow }> {
  // Samples per round, by name; the Redis task also adds its in-path round trip ('trip').
  let times = new Map<string, number[]>();
  const sample = (name: string, value: number) => {
    const list = times.get(name) ?? [];
    list.push(value);
    times.set(name, list);
  };
  const ops: Record<string, () => Promise<number>> = {
    memorySync: memory.sync,
    memoryTask: async () => (await memory.task()).ms,
  };
  if (redis !== undefined) {
    const { side, timing } = redis;
    ops['redisSync'] = side.sync;
    ops['redisTask'] = async () => {
      timing.spans.length = 0;
      timing.recording = true;
      try {
        const { ms, create, get } = await side.task();
        const created = tripsIn(timing.spans, create);
        const read = tripsIn(timing.spans, get);
        sample('trip', (created.ms + read.ms) / (created.count + read.count));
        return ms;
      } finally {
        timing.recording = false;
      }
    };
    ops['peek'] = redis.peekAlone;
  }
  const names = Object.keys(ops);
  const random = seeded(0x5eed);
  const rounds = quick ? 8 : 30;
  const perRound = 50;
  const all = new Map<string, number[]>();
  const medians = new Map<string, number[]>();
  for (let i = 0; i < perRound * 2; i++) for (const name of names) await ops[name]?.();
  for (let round = 0; round < rounds; round++) {
    times = new Map();
    for (let call = 0; call < perRound; call++) {
      for (const name of shuffled(names, random)) sample(name, (await ops[name]?.()) ?? Number.NaN);
    }
    for (const [name, values] of times) {
      all.set(name, [...(all.get(name) ?? []), ...values]);
      medians.set(name, [...(medians.get(name) ?? []), median(values)]);
    }
  }
  const of = (name: string) => medians.get(name) ?? [];
  const row = (label: string, sync: string, task: string, target: number): McpProxyTaskRow => {
    const taskVsSync = paired(of(task), of(sync));
    return {
      store: label,
      rounds,
      syncMs: median(all.get(sync) ?? []),
      taskMs: median(all.get(task) ?? []),
      taskVsSync,
      target,
      met: taskVsSync.median <= target,
    };
  };
  const memoryRow = row('memory', 'memorySync', 'memoryTask', taskTargets.memoryVsSync);
  console.log(
    `\nTasks, memory store, in process: one synchronous call ${ms3(memoryRow.syncMs)}, ` +
      `create + first tasks/get ${ms3(memoryRow.taskMs)}`,
  );
  console.log(
    `   task / synchronous call: ${r(memoryRow.taskVsSync)}   (target ≤ ${memoryRow.target}×, ${memoryRow.met ? 'ok' : 'MISSED'})`,
  );
  if (redis === undefined) return { memoryRow };
  const guard = row('Redis', 'redisSync', 'redisTask', taskTargets.redisVsSync);
  const trip = of('trip');
  const overMemoryInTrips = summarizeRatio(
    of('redisTask').map((ms, i) => (ms - (of('memoryTask')[i] ?? Number.NaN)) / (trip[i] ?? Number.NaN)),
  );
  const tripsMet = redis.counted.trips <= taskTargets.redisTrips;
  const overMet = overMemoryInTrips.median <= taskTargets.redisOverMemoryInTrips;
  const redisRow: McpProxyRedisTaskRow = {
    ...guard,
    criticalTrips: redis.counted.trips,
    tripsTarget: taskTargets.redisTrips,
    tripMs: median(all.get('trip') ?? []),
    peekMs: median(all.get('peek') ?? []),
    overMemoryInTrips,
    overMemoryTarget: taskTargets.redisOverMemoryInTrips,
    met: guard.met && tripsMet && overMet,
  };
  console.log(
    `\nTasks, Redis store, in process: one synchronous call ${ms3(redisRow.syncMs)}, ` +
      `create + first tasks/get ${ms3(redisRow.taskMs)}; one store round trip in the path ${ms3(redisRow.tripMs)}, ` +
      `a peek alone ${ms3(redisRow.peekMs)}`,
  );
  console.log(
    `   store round trips on the critical path: ${redisRow.criticalTrips}   (target ≤ ${taskTargets.redisTrips}, ${tripsMet ? 'ok' : 'MISSED'})`,
  );
  console.log(
    `   (Redis path − memory path) / one in-path round trip: ${formatTrips(overMemoryInTrips)}   (target ≤ ${taskTargets.redisOverMemoryInTrips}, ${overMet ? 'ok' : 'MISSED'})`,
  );
  console.log(
    `   task / synchronous call (guard): ${r(guard.taskVsSync)}   (≤ ${guard.target}×, ${guard.met ? 'ok' : 'MISSED'})`,
  );
  return { memoryRow, redisRow };
}

// How to start the proxy: the tsc build by default, or dist/, or the source through tsx.
function proxyEntry(root: string): { entry: string[]; origin: string } {
  const argv = process.argv;
  if (argv.includes('--source')) {
    return {
      entry: ['--import', 'tsx', `${root}integrations/mcp/cli.ts`],
      origin: 'proxy from source via tsx',
    };
  }
  if (argv.includes('--dist')) {
    const cli = `${root}dist/integrations/mcp/cli.js`;
    if (!existsSync(cli)) {
      console.error('bench/mcp-proxy.ts --dist: run `npm run build` first');
      process.exit(2);
    }
    return { entry: [cli], origin: 'proxy built in dist/' };
  }
  const cli = `${buildDir}/integrations/mcp/cli.js`;
  if (!argv.includes('--prebuilt') || !existsSync(cli)) buildLibrary();
  if (!existsSync(cli)) throw new Error(`tsc produced no ${cli}`);
  return { entry: [cli], origin: 'proxy built by tsc' };
}

async function connectStdio([command = '', ...args]: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' }, pinned);
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  return client;
}

async function connectHttp(url: string): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' }, pinned);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

// Starts a process that serves HTTP and says where on stderr ("… listening on <url>").
async function startListening([command = '', ...args]: string[]): Promise<{
  child: ChildProcess;
  url: string;
}> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr as NodeJS.ReadableStream });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`${args.join(' ')} exited (${String(code)}) before listening`);
  });
  const listening = (async () => {
    for await (const line of lines) {
      const found = / listening on (\S+)/.exec(line);
      if (found?.[1] !== undefined) return found[1];
    }
    throw new Error(`${args.join(' ')} closed stderr before listening`);
  })();
  const url = await Promise.race([listening, exited]);
  exited.catch(() => {});
  return { child, url };
}

async function roundTrips(client: Client, ms: number, count: number, into: number[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const result = (await client.callTool({ name: 'wait', arguments: { ms } })) as CallToolResult;
    if (result.isError === true) throw new Error(`the bench tool failed: ${JSON.stringify(result.content)}`);
    into.push(performance.now() - start);
  }
}

function paired(a: number[], b: number[]): Ratio {
  return summarizeRatio(a.map((value, i) => value / (b[i] ?? Number.NaN)));
}

function summarizeRatio(sample: number[]): Ratio {
  const { median: mid, q1, q3 } = summarize(sample);
  return { median: mid, q1, q3 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

function ms3(value: number): string {
  return `${value.toFixed(3)} ms`;
}

function r(value: Ratio): string {
  return `${value.median.toFixed(3)}× (IQR ${value.q1.toFixed(3)}–${value.q3.toFixed(3)})`;
}
