// Idempotency memory: bytes per cached key at one million keys, and the longest pause spent expiring them.
//
// Run in its own process, with a collectable heap:
//   node --expose-gc --import tsx bench/memory.ts [--keys 1000000] [--prebuilt | --source | --library path]
// `bench/run.ts` starts it that way and reads the JSON it prints as its last line. The library is
// the tsc build (see bench/library.ts); --prebuilt reuses bench/.build, --source runs the TS
// source, --library loads another compiled entry point (e.g. a candidate change).

import { PerformanceObserver, performance } from 'node:perf_hooks';
import { z } from 'zod';
import { loadLibrary, loadOptionsFromArgv, type Library } from './library.js';
import type { Dispatcher, IdempotencyLayer } from '../index.js';

/** What this script reports. */
export interface MemoryResult {
  keys: number;
  /** heapUsed after a full GC, before and after caching `keys` successes, in bytes. */
  heapBefore: number;
  heapAfter: number;
  /** (heapAfter − heapBefore) / keys. */
  bytesPerKey: number;
  /** Cached entries reported by the middleware after the fill. */
  cached: number;
  /** Wall time of the fill, per dispatch, in nanoseconds. */
  fillNsPerDispatch: number;
  /** Dispatches made after the clock passed the TTL, until every old entry was gone. */
  expiry: PauseStats;
  /** The same number of dispatches with nothing expiring: the pauses GC alone causes. */
  control: PauseStats;
}

/** Per-dispatch times of a run of dispatches, in milliseconds. */
export interface PauseStats {
  dispatches: number;
  /** Synchronous part of each `dispatch()` call, where all expiry work happens (blocks the loop). */
  syncMaxMs: number;
  syncP99Ms: number;
  /** Whole dispatch, to its outcome. */
  totalMaxMs: number;
  totalP99Ms: number;
  totalMedianMs: number;
  /** The longest whole dispatch that no garbage collection overlapped. */
  totalMaxWithoutGcMs: number;
  /** Which dispatch of the run (0-based) that was. */
  totalMaxWithoutGcIndex: number;
  /** Dispatches that took over 1 ms / over 5 ms, GC included. */
  over1Ms: number;
  over5Ms: number;
  /** The longest GC pause seen during the run. */
  longestGcMs: number;
}

const ttlMs = 3_600_000;
const result = Object.freeze({ status: 'ok' });

function parseKeys(argv: readonly string[]): number {
  const at = argv.indexOf('--keys');
  const value = at === -1 ? 1_000_000 : Number(argv[at + 1]);
  if (!Number.isInteger(value) || value < 1_000) throw new TypeError('--keys must be an integer >= 1000');
  return value;
}

function build(
  lib: Library,
  maxEntries: number,
  now: () => number,
): { dispatcher: Dispatcher; cache: IdempotencyLayer } {
  const {
    ToolRegistry,
    budgetGuard,
    concurrencyLimit,
    createDispatcher,
    errorMapping,
    idempotency,
    retry,
    schemaValidation,
    timeout,
    toolLookup,
  } = lib;
  const registry = new ToolRegistry().register({
    name: 'bench.memory',
    inputSchema: z.object({ query: z.string(), limit: z.number().int() }),
    handler: () => result,
  });
  const cache = idempotency({ maxEntries, ttlMs, clock: { now } });
  // The default stack's layers in its order, with an idempotency layer we can ask for its size.
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    schemaValidation(),
    budgetGuard(),
    cache,
    concurrencyLimit(),
    retry(),
    timeout(),
  ]);
  return { dispatcher, cache };
}

async function fill(dispatcher: Dispatcher, prefix: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const outcome = await dispatcher.dispatch(
      'bench.memory',
      { query: `q${i}`, limit: 10 },
      { idempotencyKey: `${prefix}${i}` },
    );
    if (!outcome.ok) throw new Error(`fill failed: ${outcome.kind} ${outcome.message}`);
  }
}

function heapAfterGc(): number {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

// Times `count` fresh-key dispatches one by one; GC pauses are recorded to tell them apart.
async function timeDispatches(dispatcher: Dispatcher, prefix: string, count: number): Promise<PauseStats> {
  const gcs: Array<{ start: number; end: number }> = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      gcs.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const starts = new Float64Array(count);
  const syncEnds = new Float64Array(count);
  const ends = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    starts[i] = performance.now();
    const pending = dispatcher.dispatch(
      'bench.memory',
      { query: `p${i}`, limit: 10 },
      { idempotencyKey: `${prefix}${i}` },
    );
    syncEnds[i] = performance.now();
    const outcome = await pending;
    ends[i] = performance.now();
    if (!outcome.ok) throw new Error(`dispatch failed: ${outcome.kind}`);
  }
  // GC entries are delivered asynchronously; let them arrive.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();

  const sync: number[] = [];
  const total: number[] = [];
  let totalMaxWithoutGcMs = 0;
  let totalMaxWithoutGcIndex = -1;
  let over1Ms = 0;
  let over5Ms = 0;
  for (let i = 0; i < count; i++) {
    const start = starts[i] ?? 0;
    const end = ends[i] ?? 0;
    sync.push((syncEnds[i] ?? 0) - start);
    total.push(end - start);
    if (end - start > 1) over1Ms += 1;
    if (end - start > 5) over5Ms += 1;
    const overlapsGc = gcs.some((gc) => gc.start < end && gc.end > start);
    if (!overlapsGc && end - start > totalMaxWithoutGcMs) {
      totalMaxWithoutGcMs = end - start;
      totalMaxWithoutGcIndex = i;
    }
  }
  sync.sort((a, b) => a - b);
  total.sort((a, b) => a - b);
  const at = (sorted: number[], q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return {
    dispatches: count,
    syncMaxMs: at(sync, 1),
    syncP99Ms: at(sync, 0.99),
    totalMaxMs: at(total, 1),
    totalP99Ms: at(total, 0.99),
    totalMedianMs: at(total, 0.5),
    totalMaxWithoutGcMs,
    totalMaxWithoutGcIndex,
    over1Ms,
    over5Ms,
    longestGcMs: gcs.reduce((longest, gc) => Math.max(longest, gc.end - gc.start), 0),
  };
}

async function main(): Promise<void> {
  const keys = parseKeys(process.argv);
  const { lib } = await loadLibrary(loadOptionsFromArgv(process.argv));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  let fakeNow = Date.now();
  const now = () => fakeNow;

  // Warm the JIT on a throwaway instance, so the measured heap holds no warm-up entries.
  await fill(build(lib, 10_000, now).dispatcher, 'warm-', 20_000);

  const { dispatcher, cache } = build(lib, keys, now);
  const heapBefore = heapAfterGc();
  const fillStart = process.hrtime.bigint();
  await fill(dispatcher, 'key-', keys);
  const fillNsPerDispatch = Number(process.hrtime.bigint() - fillStart) / keys;
  const heapAfter = heapAfterGc();
  const { cached } = cache.size();
  const bytesPerKey = (heapAfter - heapBefore) / cached;
  log(`memory: ${cached} keys cached, ${bytesPerKey.toFixed(1)} bytes/key`);

  // Enough dispatches to expire every old entry, at the layer's bounded evictions per call.
  const rounds = Math.ceil(keys / 32);
  const control = await timeDispatches(dispatcher, 'control-', rounds);
  fakeNow += ttlMs + 1;
  const expiry = await timeDispatches(dispatcher, 'after-', rounds);
  const left = cache.size().cached;
  log(
    `expiry: ${rounds} dispatches, ${left} entries left, longest sync part ${expiry.syncMaxMs.toFixed(3)} ms`,
  );

  const report: MemoryResult = {
    keys: cached,
    heapBefore,
    heapAfter,
    bytesPerKey,
    cached,
    fillNsPerDispatch,
    expiry,
    control,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

await main();
