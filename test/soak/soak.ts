// Soak: hundreds of thousands of faulty dispatches on real timers; heap, caches and slots must stay bounded.
//
// Run through the runner (it adds --expose-gc and a time limit):
//   node --import tsx test/soak/run.ts
// or directly:
//   node --expose-gc --import tsx test/soak/soak.ts
// Exits 0 when every check holds, 1 with a message naming the broken check otherwise.
// SOAK_SCALE=0.1 runs a tenth of the workload (a quick smoke run).

import { z } from 'zod';
import {
  budgetGuard,
  circuitBreaker,
  concurrencyLimit,
  createBudget,
  createDispatcher,
  errorMapping,
  idempotency,
  isDispatchError,
  retry,
  schemaValidation,
  timeout,
  toolLookup,
  ToolRegistry,
  type DispatchOptions,
  type Outcome,
} from '../../index.js';
import { chaos, mulberry32 } from '../helpers/chaos.js';

const scale = Number(process.env['SOAK_SCALE'] ?? '1');
const warmupDispatches = Math.round(40_000 * scale);
const soakDispatches = Math.round(300_000 * scale);
const distinctKeys = Math.round(1_000_000 * scale);
const batchSize = 128;
const maxRunning = 8;

const gc = (globalThis as { gc?: () => void }).gc;
if (typeof gc !== 'function') {
  console.error('soak: run with --expose-gc (node --expose-gc --import tsx test/soak/soak.ts)');
  process.exit(2);
}

const failures: string[] = [];
function check(condition: boolean, message: string): void {
  if (!condition) failures.push(message);
}

// A listener or timer warning under load is a resource finding too.
const warnings: string[] = [];
process.on('warning', (warning) => {
  warnings.push(`${warning.name}: ${warning.message}`);
});

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function settledHeap(): Promise<number> {
  // A few rounds, so finalizers and weak references cleared by one collection are collected too.
  let heap = Infinity;
  for (let round = 0; round < 4; round++) {
    await nextTurn();
    (gc as () => void)();
    heap = Math.min(heap, process.memoryUsage().heapUsed);
  }
  return heap;
}

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;

// ---------------------------------------------------------------------------------------------
// 1. Mixed faults: heap after the run within 10% of heap after warm-up.

async function mixedFaults(): Promise<void> {
  const random = mulberry32(20_261_129);
  const argsSchema = z.object({ id: z.number().int() });
  const rates = { transient: 0.08, error: 0.03, 'throw-value': 0.02, 'sync-throw': 0.02, hang: 0.004 };
  const reader = chaos({ rates, random, delayMs: 1, wait: nextTurn });
  const writer = chaos({ rates, random, delayMs: 1, wait: nextTurn });
  const registry = new ToolRegistry()
    .register({
      name: 'kv.get',
      inputSchema: argsSchema,
      idempotent: true,
      timeoutMs: 15,
      handler: reader.handler,
    })
    .register({ name: 'kv.put', inputSchema: argsSchema, timeoutMs: 15, handler: writer.handler });
  const idem = idempotency({ ttlMs: 50, maxEntries: 2_000 });
  const slots = concurrencyLimit({ max: maxRunning });
  const breaker = circuitBreaker({ failureThreshold: 4, cooldownMs: 5 });
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    schemaValidation(),
    budgetGuard(),
    breaker,
    idem,
    slots,
    retry({ baseDelayMs: 0, random }),
    timeout(),
  ]);

  const kinds = new Map<string, number>();
  let rejections = 0;
  let malformed = 0;
  let done = 0;

  const one = (index: number, budget: ReturnType<typeof createBudget>): Promise<void> => {
    const u = random();
    const options: DispatchOptions = {};
    let name = u < 0.5 ? 'kv.get' : 'kv.put';
    let args: unknown = { id: index % 1_000 };
    if (u < 0.01) name = 'no.such_tool';
    else if (u < 0.02) args = { id: 'not a number' };
    if (random() < 0.3) options.idempotencyKey = `key-${index % 5_000}`;
    if (random() < 0.05) options.budget = budget;
    if (random() < 0.05) {
      const controller = new AbortController();
      options.signal = controller.signal;
      void nextTurn().then(() => controller.abort());
    }
    return dispatcher.dispatch(name, args, options).then(
      (outcome: Outcome) => {
        done += 1;
        if (outcome.ok !== true && !isDispatchError(outcome)) malformed += 1;
        const kind = outcome.ok ? 'ok' : outcome.kind;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      },
      () => {
        rejections += 1;
      },
    );
  };

  const run = async (count: number, offset: number) => {
    for (let start = 0; start < count; start += batchSize) {
      const budget = createBudget(3);
      const batch: Array<Promise<void>> = [];
      for (let i = start; i < Math.min(count, start + batchSize); i++) batch.push(one(offset + i, budget));
      await Promise.all(batch);
    }
  };

  const began = Date.now();
  await run(warmupDispatches, 0);
  const warmHeap = await settledHeap();
  await run(soakDispatches, warmupDispatches);
  // Let timed-out attempts' late handlers and the last aborts finish.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const finalHeap = await settledHeap();
  const seconds = (Date.now() - began) / 1_000;

  const total = warmupDispatches + soakDispatches;
  const summary = [...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ');
  console.log(`mixed faults: ${total} dispatches in ${seconds.toFixed(1)} s (${summary})`);
  console.log(`  heap after warm-up ${mb(warmHeap)}, after the run ${mb(finalHeap)}`);
  const faults = { ...reader.stats.faults };
  for (const [kind, n] of Object.entries(writer.stats.faults)) faults[kind as keyof typeof faults] += n;
  console.log(`  handler attempts ${reader.stats.entries + writer.stats.entries}: ${JSON.stringify(faults)}`);

  check(done === total, `mixed faults: ${total - done} of ${total} dispatches never settled`);
  check(rejections === 0, `mixed faults: ${rejections} dispatches rejected`);
  check(malformed === 0, `mixed faults: ${malformed} outcomes were neither a success nor a DispatchError`);
  check(
    Math.max(reader.stats.maxOpen, writer.stats.maxOpen) <= maxRunning,
    `mixed faults: ${Math.max(reader.stats.maxOpen, writer.stats.maxOpen)} attempts open at once (max ${maxRunning})`,
  );
  check(
    finalHeap <= warmHeap * 1.1,
    `mixed faults: heap grew from ${mb(warmHeap)} after warm-up to ${mb(finalHeap)} (more than 10%)`,
  );
  const load = slots.load();
  check(load.running === 0 && load.queued === 0, `mixed faults: slots not freed: ${JSON.stringify(load)}`);
  check(idem.size().inFlight === 0, `mixed faults: ${idem.size().inFlight} keys still in flight`);
  check(idem.size().cached <= 2_000, `mixed faults: ${idem.size().cached} cached entries (maxEntries 2000)`);
}

// ---------------------------------------------------------------------------------------------
// 2. The idempotency cache stays within maxEntries and evicts expired keys.

function keyedDispatcher(maxEntries: number, ttlMs: number, now: () => number) {
  const registry = new ToolRegistry().register({
    name: 'kv.get',
    inputSchema: z.object({ id: z.number() }),
    idempotent: true,
    handler: ({ id }) => id,
  });
  const idem = idempotency({ ttlMs, maxEntries, clock: { now } });
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    schemaValidation(),
    budgetGuard(),
    idem,
    concurrencyLimit(),
    retry({ baseDelayMs: 0 }),
    timeout(),
  ]);
  return { dispatcher, idem };
}

async function cacheBounds(): Promise<void> {
  let clock = 1_000_000;
  const maxEntries = 500;
  const ttlMs = 1_000;
  const { dispatcher, idem } = keyedDispatcher(maxEntries, ttlMs, () => clock);
  let largest = 0;
  for (let i = 0; i < 20_000; i++) {
    const outcome = await dispatcher.dispatch('kv.get', { id: i }, { idempotencyKey: `k${i}` });
    check(outcome.ok, `cache bounds: dispatch ${i} failed: ${outcome.ok ? '' : outcome.message}`);
    largest = Math.max(largest, idem.size().cached);
    clock += 0.01;
  }
  check(largest <= maxEntries, `cache bounds: ${largest} entries cached (maxEntries ${maxEntries})`);
  // A recent key is served from the cache; one that was pushed out runs again.
  const recent = await dispatcher.dispatch('kv.get', { id: 19_999 }, { idempotencyKey: 'k19999' });
  check(recent.ok && recent.attempts === 0, 'cache bounds: the newest key was not served from the cache');
  const pushedOut = await dispatcher.dispatch('kv.get', { id: 0 }, { idempotencyKey: 'k0' });
  check(
    pushedOut.ok && pushedOut.attempts === 1,
    'cache bounds: the oldest key was not evicted past maxEntries',
  );

  // Past the TTL, a handful of calls evicts every expired entry.
  clock += ttlMs + 1;
  const fresh = 10;
  for (let i = 0; i < fresh; i++) {
    await dispatcher.dispatch('kv.get', { id: -i }, { idempotencyKey: `fresh${i}` });
  }
  const { cached, inFlight } = idem.size();
  check(
    cached === fresh,
    `cache bounds: ${cached} entries cached after the TTL passed (expected only the ${fresh} fresh ones)`,
  );
  check(inFlight === 0, `cache bounds: ${inFlight} keys still in flight`);
  console.log(`cache bounds: at most ${largest} of ${maxEntries} entries; ${cached} left after the TTL`);
}

// ---------------------------------------------------------------------------------------------
// 3. One million distinct keys: memory stays bounded by maxEntries.

async function millionKeys(): Promise<void> {
  let clock = 0;
  const maxEntries = 10_000;
  const { dispatcher, idem } = keyedDispatcher(maxEntries, 60_000, () => clock);
  const began = Date.now();
  let firstHeap = 0;
  let largest = 0;
  const inFlightBatch = 64;
  // The cache is full after maxEntries keys; the first heap reading comes well past that.
  const measureAt = Math.max(4 * maxEntries, Math.floor(distinctKeys / 5 / inFlightBatch) * inFlightBatch);
  for (let start = 0; start < distinctKeys; start += inFlightBatch) {
    const batch: Array<Promise<Outcome>> = [];
    for (let i = start; i < Math.min(distinctKeys, start + inFlightBatch); i++) {
      batch.push(dispatcher.dispatch('kv.get', { id: i }, { idempotencyKey: `million-${i}` }));
    }
    const outcomes = await Promise.all(batch);
    if (outcomes.some((outcome) => !outcome.ok))
      check(false, `million keys: a dispatch failed near key ${start}`);
    largest = Math.max(largest, idem.size().cached);
    clock += 1;
    if (start === measureAt) firstHeap = await settledHeap();
  }
  const lastHeap = await settledHeap();
  const seconds = (Date.now() - began) / 1_000;
  console.log(
    `million keys: ${distinctKeys} keys in ${seconds.toFixed(1)} s; at most ${largest} cached; heap ${mb(firstHeap)} -> ${mb(lastHeap)}`,
  );
  check(largest <= maxEntries, `million keys: ${largest} entries cached (maxEntries ${maxEntries})`);
  check(
    firstHeap > 0 && lastHeap <= firstHeap * 1.1,
    `million keys: heap grew from ${mb(firstHeap)} to ${mb(lastHeap)} (more than 10%) with the cache already full`,
  );
}

const began = Date.now();
await mixedFaults();
await cacheBounds();
await millionKeys();
const seconds = ((Date.now() - began) / 1_000).toFixed(1);
for (const warning of new Set(warnings)) check(false, `process warning: ${warning}`);
if (failures.length > 0) {
  console.error(`soak FAILED after ${seconds} s:\n  - ${failures.join('\n  - ')}`);
  process.exitCode = 1;
} else {
  console.log(`soak passed in ${seconds} s`);
}
