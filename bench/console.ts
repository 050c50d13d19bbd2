// Issue 35's console targets (section 10 of docs/benchmarks.md), on the TypeScript source:
//
//   (a) freshness: 1 000 approvals a minute opened on store A (one Redis client), each timed until
//       it appears in the event stream of a console on store B (another Redis client, in this same
//       process) and, once decided on A, until B's stream says it is decided; p99 ≤ 1 s;
//   (b) races: approve (console API) / approve (gate.approve, a host bridge) / deny (store.answer,
//       as MCP) at once, with two resumed dispatches racing them: the handler runs at most once per
//       token and never after a deny, and each token has exactly one audit record;
//   (c) 10 000 pending requests listed and filtered through the console API in < 200 ms server time;
//   (d) a console attached and idle (its tool-health aggregator subscribed, no stream open) costs
//       ≤ 1.05× per dispatch, as the median of paired interleaved rounds.
//
//   npx tsx bench/console.ts [--quick] [--write] [--idle-only | --listing-only]     (npm run bench:console)
//
// --quick: fewer trials and a 10 s freshness run; --write merges the result into
// bench/results.json as `console` (then `npx tsx bench/run.ts --render` rewrites the page);
// --idle-only: row (d) alone, the other rows kept from bench/results.json. Row (d) measures the
// aggregator both ways: listening always (`toolHealth({ dispatcher })`) and only while watched.
// --listing-only: row (c) alone (memory and Redis), the other rows kept from bench/results.json.
// bench/run.ts runs it as section 10 of a full run.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
  type ApprovalStore,
  type Dispatcher,
  type Outcome,
} from '../index.js';
import { controlRoom, type ControlRoom } from '../integrations/console/index.js';
import { toolHealth } from '../integrations/console/health.js';
import { redisApprovalStore } from '../integrations/redis/index.js';
import { redisBinary, startRedisServer, type RedisServer } from '../test/helpers/redis-server.js';
import { connectNodeRedis, type Connected } from '../test/integrations/redis/clients.js';
import { pairedRatio, runGroup, summarize, type Ratio } from './harness.js';
import { formatRatio } from './report.js';

/** The issue's targets. */
export const consoleTargets = {
  freshnessP99Ms: 1_000,
  approvalsPerMinute: 1_000,
  listServerMs: 200,
  pending: 10_000,
  idleVsBare: 1.05,
} as const;

/** Latencies of one freshness run, in ms. */
export interface FreshnessResult {
  readonly opened: number;
  readonly appearP50: number;
  readonly appearP99: number;
  readonly goneP50: number;
  readonly goneP99: number;
  /** Requests that never appeared, or whose decision never reached B's stream. */
  readonly missing: number;
}

/** One store's race trials. */
export interface RaceResult {
  readonly store: 'memory' | 'redis';
  readonly trials: number;
  readonly approved: number;
  readonly denied: number;
  /** Tokens whose handler ran twice or more, ran although denied, or whose audit log is not one record. */
  readonly violations: number;
}

/** One store's listing through the console API: server time of the filtered query and of a full listing. */
export interface ListingResult {
  readonly store: 'memory' | 'redis';
  readonly pending: number;
  /** `?tenant=` matching 1 in 100, so every request is looked at: median and max server ms. */
  readonly filteredMedianMs: number;
  readonly filteredMaxMs: number;
  /** Every request, 500 a page, cursor after cursor: the pages' server ms, summed (median of runs). */
  readonly fullListingMs: number;
}

/** The idle console's cost per dispatch: its aggregator hearing every event, and hearing only while watched. */
export interface IdleResult {
  /** `toolHealth({ dispatcher })` (listen: 'always') attached / bare. */
  readonly ratio: Ratio;
  /** `toolHealth({ dispatcher, listen: 'watched' })` attached, nobody looking / bare. */
  readonly watchedRatio?: Ratio;
  readonly bareNs: number;
  readonly attachedNs: number;
  readonly watchedNs?: number;
  readonly rounds: number;
}

/** What section 10 measured. */
export interface ConsoleBenchResult {
  readonly quick: boolean;
  readonly freshness: FreshnessResult | { readonly error: string };
  readonly races: readonly RaceResult[];
  readonly listing: readonly ListingResult[];
  readonly idle: IdleResult;
}

const token = 'bench-console-token-0123456789';
const bearer = { authorization: `Bearer ${token}` };
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function refunds(store: ApprovalStore) {
  const runs = new Map<number, number>();
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: true,
    handler: async ({ amount }) => {
      runs.set(amount, (runs.get(amount) ?? 0) + 1);
      return { refunded: amount };
    },
  });
  const gate = approvalGate({ registry, store });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, runs };
}

function tokenOf(outcome: Outcome): string {
  if (outcome.ok || outcome.approval === undefined)
    throw new Error(`expected a pause, got ${outcome.ok ? 'a success' : outcome.kind}`);
  return outcome.approval.token;
}

interface Served {
  readonly origin: string;
  /** Server ms of each request answered, in order. */
  readonly serverMs: number[];
  stop(): Promise<void>;
}

async function serve(room: ControlRoom): Promise<Served> {
  const serverMs: number[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => serverMs.push(Number(process.hrtime.bigint() - started) / 1e6));
    room.handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    serverMs,
    stop: async () => {
      await room.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// An event-stream client: calls `onEvent` for each event as it arrives.
async function listen(origin: string, onEvent: (type: string, data: { token?: string }) => void) {
  const abort = new AbortController();
  const response = await fetch(`${origin}/console/api/events`, { headers: bearer, signal: abort.signal });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (type !== undefined && data !== undefined) onEvent(type, JSON.parse(data));
      }
    }
  })();
  return () => abort.abort();
}

// mulberry32: the same seed, the same orders.
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], rand: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

// (a): A opens, B's console announces; A decides, B's console hears.
async function freshness(
  redis: RedisServer,
  seconds: number,
  log: (text?: string) => void,
): Promise<FreshnessResult> {
  const prefix = `bench-fresh-${process.pid}`;
  const [clientA, clientB] = await Promise.all([connectNodeRedis(redis.url), connectNodeRedis(redis.url)]);
  const a = refunds(redisApprovalStore(clientA.store, { prefix }));
  const b = refunds(redisApprovalStore(clientB.store, { prefix }));
  const served = await serve(controlRoom({ token, gate: b.gate }));
  // The stream may announce a request before its dispatch has answered here: times are kept by
  // token on both sides and paired at the end.
  const openedAt = new Map<string, number>();
  const appearedAt = new Map<string, number>();
  const decidedAt = new Map<string, number>();
  const goneAt = new Map<string, number>();
  const settled: Array<Promise<unknown>> = [];
  const stop = await listen(served.origin, (type, data) => {
    const at = now();
    const id = data.token ?? '';
    if (type === 'approval.opened' && !appearedAt.has(id)) appearedAt.set(id, at);
    else if (type === 'approval.decided' && !goneAt.has(id)) goneAt.set(id, at);
  });
  // The stream's first listing sets its baseline, and its subscription lands on Redis.
  await sleep(1_000);
  const count = Math.round((consoleTargets.approvalsPerMinute / 60) * seconds);
  const everyMs = 60_000 / consoleTargets.approvalsPerMinute;
  const start = now();
  const opening: Array<Promise<unknown>> = [];
  for (let i = 0; i < count; i++) {
    const due = start + i * everyMs - now();
    if (due > 0) await sleep(due);
    const at = now();
    opening.push(
      a.dispatcher.dispatch('payments.refund', { amount: i }).then((outcome) => {
        const id = tokenOf(outcome);
        openedAt.set(id, at);
        // Decided on A a second after it was opened: some 17 requests wait at any time.
        settled.push(
          sleep(Math.max(0, at + 1_000 - now())).then(() => {
            decidedAt.set(id, now());
            return a.gate.approve(id, { by: 'bench', channel: 'host' });
          }),
        );
      }),
    );
  }
  await Promise.all(opening);
  await Promise.allSettled(settled);
  // B's poll and the decisions' messages, with room to spare.
  for (let waited = 0; goneAt.size < count && waited < 5_000; waited += 50) await sleep(50);
  const appearMs: number[] = [];
  const goneMs: number[] = [];
  for (const [id, at] of openedAt) {
    const appeared = appearedAt.get(id);
    if (appeared !== undefined) appearMs.push(appeared - at);
    const decided = decidedAt.get(id);
    const gone = goneAt.get(id);
    if (decided !== undefined && gone !== undefined) goneMs.push(gone - decided);
  }
  stop();
  await served.stop();
  await Promise.all([clientA.close(), clientB.close()]);
  appearMs.sort((x, y) => x - y);
  goneMs.sort((x, y) => x - y);
  const result: FreshnessResult = {
    opened: count,
    appearP50: quantile(appearMs, 0.5),
    appearP99: quantile(appearMs, 0.99),
    goneP50: quantile(goneMs, 0.5),
    goneP99: quantile(goneMs, 0.99),
    missing: count - appearMs.length + (count - goneMs.length),
  };
  log(
    `   freshness (${count} approvals in ${seconds} s, two Redis clients in one process): appear p50 ${result.appearP50.toFixed(0)} ms, p99 ${result.appearP99.toFixed(0)} ms; decided p50 ${result.goneP50.toFixed(0)} ms, p99 ${result.goneP99.toFixed(0)} ms; missing ${result.missing}   (target p99 ≤ ${consoleTargets.freshnessP99Ms} ms)`,
  );
  return result;
}

// (b): three channels answer at once while two resumed dispatches race them.
async function races(
  kind: 'memory' | 'redis',
  stores: { gate: ApprovalStore; mcp: ApprovalStore },
  trials: number,
  log: (text?: string) => void,
): Promise<RaceResult> {
  const { gate, dispatcher, runs } = refunds(stores.gate);
  const served = await serve(controlRoom({ token, gate }));
  const random = seeded(35);
  let approved = 0;
  let denied = 0;
  let violations = 0;
  const trial = async (amount: number) => {
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', { amount }));
    const resume = () => dispatcher.dispatch('payments.refund', { amount }, { approval: paused });
    const channels = [
      () =>
        fetch(`${served.origin}/console/api/approvals/${paused}/approve`, {
          method: 'POST',
          headers: { ...bearer, 'content-type': 'application/json' },
          body: '{}',
        }).then((response) => response.arrayBuffer()),
      () => gate.approve(paused, { by: 'host-bridge', channel: 'host' }).catch(() => false),
      () =>
        Promise.resolve(
          stores.mcp.answer(paused, { action: 'deny', reason: 'declined', by: 'mcp-client', channel: 'mcp' }),
        ).catch(() => false),
      resume,
      resume,
    ];
    // Started in a seeded random order each trial: in one process the first started would
    // otherwise always win on the memory store.
    await Promise.all(shuffled(channels, random).map((start) => start()));
    await resume();
    const record = await stores.mcp.get(paused);
    const audit = (await stores.mcp.audit?.({ token: paused }))?.items.length ?? 0;
    const ran = runs.get(amount) ?? 0;
    if (record?.status === 'approved') approved += 1;
    if (record?.status === 'denied') denied += 1;
    if (ran > 1 || (record?.status === 'denied' && ran > 0) || audit !== 1) violations += 1;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < trials) await trial(next++);
    }),
  );
  await served.stop();
  log(
    `   races on ${kind}: ${trials} trials, ${approved} approved, ${denied} denied, ${violations} violations   (target 0)`,
  );
  return { store: kind, trials, approved, denied, violations };
}

// (c): 10 000 pending, one tenant in 100 asked for; then every page.
async function listing(
  kind: 'memory' | 'redis',
  store: ApprovalStore,
  log: (text?: string) => void,
): Promise<ListingResult> {
  const { gate, dispatcher } = refunds(store);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < consoleTargets.pending) {
        const i = next++;
        tokenOf(await dispatcher.dispatch('payments.refund', { amount: i }, { tenant: `t-${i % 100}` }));
      }
    }),
  );
  const served = await serve(controlRoom({ token, gate }));
  const filtered: number[] = [];
  const full: number[] = [];
  for (let run = 0; run < 11; run++) {
    const before = served.serverMs.length;
    const answer = await fetch(`${served.origin}/console/api/approvals?tenant=t-${run}&limit=500`, {
      headers: bearer,
    });
    const { items } = (await answer.json()) as { items: unknown[] };
    if (items.length !== consoleTargets.pending / 100)
      throw new Error(`listing: ${items.length} items for one tenant`);
    filtered.push(served.serverMs[before] as number);
    const pagesFrom = served.serverMs.length;
    let cursor: string | undefined;
    let seen = 0;
    do {
      const page = await fetch(
        `${served.origin}/console/api/approvals?limit=500${cursor === undefined ? '' : `&cursor=${cursor}`}`,
        { headers: bearer },
      );
      const body = (await page.json()) as { items: unknown[]; cursor?: string };
      seen += body.items.length;
      cursor = body.cursor;
    } while (cursor !== undefined);
    if (seen !== consoleTargets.pending)
      throw new Error(`listing: ${seen} of ${consoleTargets.pending} listed`);
    full.push(served.serverMs.slice(pagesFrom).reduce((sum, ms) => sum + ms, 0));
  }
  await served.stop();
  const result: ListingResult = {
    store: kind,
    pending: consoleTargets.pending,
    filteredMedianMs: summarize(filtered).median,
    filteredMaxMs: Math.max(...filtered),
    fullListingMs: summarize(full).median,
  };
  log(
    `   ${consoleTargets.pending} pending on ${kind}: filtered by tenant ${result.filteredMedianMs.toFixed(1)} ms median, ${result.filteredMaxMs.toFixed(1)} ms max; all 20 pages ${result.fullListingMs.toFixed(1)} ms   (target < ${consoleTargets.listServerMs} ms server time)`,
  );
  return result;
}

// (d): the same stack with and without a console attached and idle, in paired interleaved rounds.
async function idle(quick: boolean, log: (text?: string) => void): Promise<IdleResult> {
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string(), limit: z.number() }),
    handler: ({ limit }) => limit,
  });
  const bare = createDispatcher(defaultStack({ registry }));
  const attached = createDispatcher(defaultStack({ registry }));
  const watched = createDispatcher(defaultStack({ registry }));
  const health = toolHealth({ dispatcher: attached });
  const watchedHealth = toolHealth({ dispatcher: watched, listen: 'watched' });
  const rooms = [
    controlRoom({ token, dispatcher: attached, registry, health }),
    controlRoom({ token, dispatcher: watched, registry, health: watchedHealth }),
  ];
  const args = { query: 'q', limit: 3 };
  const caseOf = (id: string, dispatcher: Dispatcher) => ({
    id,
    label: id,
    async batch(n: number) {
      for (let i = 0; i < n; i++) {
        const outcome = await dispatcher.dispatch('search.web', args);
        if (!outcome.ok) throw new Error(`${id}: ${outcome.kind}`);
      }
    },
  });
  const group = await runGroup(
    [caseOf('bare', bare), caseOf('attached', attached), caseOf('watched', watched)],
    quick
      ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
      : { rounds: 41, warmupRounds: 5, warmupMs: 2_000, batchMs: 20 },
  );
  await Promise.all(rooms.map((room) => room.close()));
  health.close();
  watchedHealth.close();
  const ratio = pairedRatio(group, 'attached', 'bare');
  const watchedRatio = pairedRatio(group, 'watched', 'bare');
  const ns = (id: string) => group.cases.find((c) => c.id === id)?.wall.median ?? Number.NaN;
  log(
    `   console attached and idle, its aggregator listening always / bare, per dispatch: ${formatRatio(ratio)} (${ns('attached').toFixed(0)} ns vs ${ns('bare').toFixed(0)} ns)   (reported)`,
  );
  log(
    `   the same with toolHealth({ listen: 'watched' }), nobody looking: ${formatRatio(watchedRatio)} (${ns('watched').toFixed(0)} ns)   (target ≤ ${consoleTargets.idleVsBare}×)`,
  );
  return {
    ratio,
    watchedRatio,
    bareNs: ns('bare'),
    attachedNs: ns('attached'),
    watchedNs: ns('watched'),
    rounds: group.rounds,
  };
}

/** Runs section 10 and answers what it measured, logging each row as it comes. */
export async function runConsoleBench(
  log: (text?: string) => void = console.log,
  quick = false,
): Promise<ConsoleBenchResult> {
  const idleResult = await idle(quick, log);
  const trials = quick ? 500 : 10_000;
  // The listings first, in a fresh heap: the races leave 20 000 settled tokens behind.
  const listings: ListingResult[] = [await listing('memory', memoryApprovalStore(), log)];
  const raceResults: RaceResult[] = [];
  const memory = memoryApprovalStore();
  const binary = redisBinary();
  if (!binary.available) {
    raceResults.push(await races('memory', { gate: memory, mcp: memory }, trials, log));
    log(`   Redis rows not measured: ${binary.reason}`);
    return {
      quick,
      freshness: { error: binary.reason },
      races: raceResults,
      listing: listings,
      idle: idleResult,
    };
  }
  const redis = await startRedisServer();
  const clients: Connected[] = [];
  try {
    const [one, two] = await Promise.all([connectNodeRedis(redis.url), connectNodeRedis(redis.url)]);
    clients.push(one, two);
    const prefix = `bench-race-${process.pid}`;
    listings.push(
      await listing('redis', redisApprovalStore(one.store, { prefix: `bench-list-${process.pid}` }), log),
    );
    raceResults.push(await races('memory', { gate: memory, mcp: memory }, trials, log));
    raceResults.push(
      await races(
        'redis',
        { gate: redisApprovalStore(one.store, { prefix }), mcp: redisApprovalStore(two.store, { prefix }) },
        trials,
        log,
      ),
    );
    const fresh = await freshness(redis, quick ? 10 : 60, log);
    return { quick, freshness: fresh, races: raceResults, listing: listings, idle: idleResult };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await redis.stop();
  }
}

/** Row (c) alone, on memory and (when a `redis-server` is there) on Redis. */
async function listingsOnly(log: (text?: string) => void): Promise<ListingResult[]> {
  const listings: ListingResult[] = [await listing('memory', memoryApprovalStore(), log)];
  const binary = redisBinary();
  if (!binary.available) {
    log(`   Redis rows not measured: ${binary.reason}`);
    return listings;
  }
  const redis = await startRedisServer();
  const client = await connectNodeRedis(redis.url);
  try {
    const store = redisApprovalStore(client.store, { prefix: `bench-list-${process.pid}` });
    listings.push(await listing('redis', store, log));
    return listings;
  } finally {
    await client.close();
    await redis.stop();
  }
}

/** The rows of the targets table. */
export function consoleChecks(
  result: ConsoleBenchResult,
): Array<{ name: string; target: string; measured: string; met: boolean | undefined }> {
  const fresh = result.freshness;
  const rows: Array<{ name: string; target: string; measured: string; met: boolean | undefined }> = [
    'error' in fresh
      ? {
          name: 'console: freshness on Redis, p99',
          target: '≤ 1 000 ms',
          measured: 'not run',
          met: undefined,
        }
      : {
          name: `console: freshness at ${consoleTargets.approvalsPerMinute}/min on Redis, p99 appear / decided`,
          target: `≤ ${consoleTargets.freshnessP99Ms} ms`,
          measured: `${fresh.appearP99.toFixed(0)} ms / ${fresh.goneP99.toFixed(0)} ms (missing ${fresh.missing})`,
          met:
            fresh.missing === 0 && Math.max(fresh.appearP99, fresh.goneP99) <= consoleTargets.freshnessP99Ms,
        },
    ...result.races.map((race) => ({
      name: `console: approve/approve/deny races on ${race.store} (${race.trials} trials)`,
      target: '0 violations',
      measured: `${race.violations} violations`,
      met: race.violations === 0,
    })),
    ...result.listing.map((list) => ({
      name: `console: ${list.pending} pending on ${list.store} listed and filtered, server time (median)`,
      target: `< ${consoleTargets.listServerMs} ms`,
      measured: `${list.filteredMedianMs.toFixed(1)} ms median (${list.filteredMaxMs.toFixed(1)} ms max of 11)`,
      met: list.filteredMedianMs < consoleTargets.listServerMs,
    })),
    ...(result.idle.watchedRatio === undefined
      ? []
      : [
          {
            name: "console: attached and idle, toolHealth({ listen: 'watched' }) / bare, per dispatch",
            target: `≤ ${consoleTargets.idleVsBare}×`,
            measured: formatRatio(result.idle.watchedRatio),
            met: result.idle.watchedRatio.median <= consoleTargets.idleVsBare,
          },
        ]),
    // The issue's row is the room as it is built (listening only while watched); an aggregator
    // told to listen always pays for every event it hears, and is reported beside it.
    {
      name: "console: attached and idle, toolHealth({ dispatcher }) (listen: 'always') / bare, per dispatch",
      target: 'reported',
      measured: formatRatio(result.idle.ratio),
      met: undefined,
    },
  ];
  return rows;
}

/** Section 10 of docs/benchmarks.md. */
export function consoleMarkdown(result: ConsoleBenchResult | undefined): string {
  if (result === undefined) return 'Not measured in this run (`bench/results.json` has no `console`).';
  const verdict = (met: boolean | undefined) => (met === undefined ? 'n/a' : met ? 'PASS' : 'FAIL');
  const rows = consoleChecks(result)
    .map(
      (row) =>
        `| ${row.name.replace(/^console: /, '')} | ${row.measured} | ${row.target} | ${verdict(row.met)} |`,
    )
    .join('\n');
  const watchedText =
    result.idle.watchedNs === undefined
      ? ''
      : ` With \`toolHealth({ dispatcher, listen: 'watched' })\` (the aggregator hears the dispatcher only
while a stream is open or a report was asked for within its window), nobody looking: ${result.idle.watchedNs.toFixed(0)} ns.`;
  const fresh = result.freshness;
  const freshText =
    'error' in fresh
      ? `Freshness was not measured: ${fresh.error}.`
      : `Freshness: ${fresh.opened} approvals opened on store A at ${consoleTargets.approvalsPerMinute} a minute; a request
appears in B's stream after p50 ${fresh.appearP50.toFixed(0)} ms (p99 ${fresh.appearP99.toFixed(0)} ms), which is mostly the
console's 250 ms listing interval (\`approval.opened\` comes from listing the store; decisions come by
pub/sub), and a decision made on A reaches B's stream after p50 ${fresh.goneP50.toFixed(0)} ms (p99 ${fresh.goneP99.toFixed(0)} ms).
A and B are two Redis clients (each its own connections, store and gate) in one process, not two
processes; test/console/fleet.test.ts checks the same path across two real worker processes.`;
  const lists = result.listing
    .map(
      (list) =>
        `${list.store}: filtered ${list.filteredMedianMs.toFixed(1)} ms median (${list.filteredMaxMs.toFixed(1)} ms max), every page ${list.fullListingMs.toFixed(1)} ms in all`,
    )
    .join('; ');
  return `Issue 35's console targets (\`bench/console.ts\`, \`npm run bench:console\`), on the TypeScript source
through tsx, each against a console served by \`node:http\` on loopback${result.quick ? ' (a --quick run: fewer trials, a 10 s freshness run)' : ''}.

| row | measured | target | verdict |
| --- | ---: | ---: | --- |
${rows}

${freshText}

Races: each trial pauses a call, then at once approves it through the console API, approves it with
\`gate.approve\` (a host bridge) and denies it with \`store.answer\` (as the MCP channel would), while
two resumed dispatches race them; a third resumes afterwards. A violation is a handler run twice, a
run after a deny, or an audit log other than one record for the token. On Redis the gate and the
"MCP" channel use two different clients.

Listing: ${consoleTargets.pending} pending requests (100 tenants); \`GET /console/api/approvals?tenant=…&limit=500\`
matches one in 100, so every request is read and looked at. Server time is from the request to the
last byte handed to the socket, 11 runs: ${lists}.

Idle: the default stack with a console attached (\`controlRoom({ dispatcher, health: toolHealth({ dispatcher }) })\`,
no stream open, so only the aggregator's \`dispatcher.subscribe\` listener is live) against the same
stack without; ${result.idle.attachedNs.toFixed(0)} ns against ${result.idle.bareNs.toFixed(0)} ns per dispatch, median of
${result.idle.rounds} paired interleaved rounds.${watchedText}`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = process.argv.slice(2);
  const quick = argv.includes('--quick');
  console.log(`Console (issue 35)${quick ? ', --quick' : ''}`);
  const path = fileURLToPath(new URL('./results.json', import.meta.url));
  const before = JSON.parse(readFileSync(path, 'utf8')) as { console?: ConsoleBenchResult };
  // --idle-only / --listing-only: row (d) or (c) again, the other rows kept from bench/results.json.
  const result =
    argv.includes('--idle-only') && before.console !== undefined
      ? { ...before.console, idle: await idle(quick, console.log) }
      : argv.includes('--listing-only') && before.console !== undefined
        ? { ...before.console, listing: await listingsOnly(console.log) }
        : await runConsoleBench(console.log, quick);
  console.log('Targets');
  for (const row of consoleChecks(result)) {
    const verdict = row.met === undefined ? 'n/a ' : row.met ? 'PASS' : 'FAIL';
    console.log(`   [${verdict}] ${row.name}: ${row.measured} (target ${row.target})`);
  }
  if (argv.includes('--write')) {
    writeFileSync(path, `${JSON.stringify({ ...before, console: result }, null, 2)}\n`);
    console.log('Wrote `console` into bench/results.json (npx tsx bench/run.ts --render rewrites the page)');
  }
  process.exit(0);
}
