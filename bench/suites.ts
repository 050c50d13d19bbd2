// The three in-process groups: per-dispatch overhead, fan-out throughput, failure paths.

import type { BenchCase } from './harness.js';
import {
  hangingHandler,
  immediateHandler,
  smallArgs,
  tickHandler,
  toolNames,
  type CallThrough,
  type PlainOutcome,
  type Stacks,
} from './stacks.js';
import type { Outcome } from '../index.js';

/** The calls of one fan-out batch. */
export const fanOutCalls = 10_000;
/** The most calls in flight in every fan-out case. */
export const fanOutConcurrency = 8;

const timerReason = new Error('timer fired');

// A benchmark that silently measures a failure would be worse than none.
function expectOk(outcome: Outcome | PlainOutcome, what: string): void {
  if (!outcome.ok) {
    const detail = 'message' in outcome ? outcome.message : String(outcome.kind);
    throw new Error(`${what}: expected a success, got ${outcome.kind}: ${detail}`);
  }
}

function expectKind(outcome: Outcome, kind: string, what: string): void {
  if (outcome.ok || outcome.kind !== kind) {
    throw new Error(`${what}: expected ${kind}, got ${outcome.ok ? 'a success' : outcome.kind}`);
  }
}

function sequential(id: string, label: string, op: () => Promise<Outcome | PlainOutcome>): BenchCase {
  return {
    id,
    label,
    async batch(n) {
      for (let i = 0; i < n; i++) expectOk(await op(), id);
    },
  };
}

/** Per-dispatch overhead: one call at a time, a handler that resolves at once, small args. */
export function perDispatchCases(stacks: Stacks): BenchCase[] {
  let missKey = 0;
  const name = toolNames.immediate;
  return [
    {
      id: 'direct',
      label: 'direct handler call (floor)',
      async batch(n) {
        let sum = 0;
        for (let i = 0; i < n; i++) sum += await immediateHandler(smallArgs);
        if (sum !== n * (smallArgs.query.length + smallArgs.limit)) throw new Error('direct: wrong sum');
      },
    },
    sequential('ours', 'tool-dispatcher default stack, no key', () => stacks.ours.dispatch(name, smallArgs)),
    sequential('oursBehindLayer', '[pass-through layer, ...default stack], no key', () =>
      stacks.oursBehindLayer.dispatch(name, smallArgs),
    ),
    sequential('oursWithBreaker', "defaultStack({ breaker }) (the MCP proxy's stack), no key", () =>
      stacks.oursWithBreaker.dispatch(name, smallArgs),
    ),
    sequential('oursKeyMiss', 'default stack, idempotency key: miss (fresh key)', () =>
      stacks.ours.dispatch(name, smallArgs, { idempotencyKey: `miss-${++missKey}` }),
    ),
    // Its own dispatcher: in the shared one, every keyed call also pays for the miss case's churn.
    sequential('oursKeyHit', 'default stack, idempotency key: hit (same key)', () =>
      stacks.oursOwnCache.dispatch(name, smallArgs, { idempotencyKey: 'hit' }),
    ),
    sequential('cockatiel', 'cockatiel 3 wrap(bulkhead, retry, timeout) + zod', () =>
      stacks.cockatiel(name, smallArgs),
    ),
    sequential('cockatielNoAbort', 'cockatiel, same, timeout abortOnReturn: false', () =>
      stacks.cockatielNoAbortOnReturn(name, smallArgs),
    ),
    sequential('pStack', 'p-limit + p-retry + p-timeout + zod', () => stacks.pStack(name, smallArgs)),
  ];
}

/**
 * Batches of the two fast fan-out cases (the pool and ours): four 10 000-call runs each, so that
 * one collection of a competitor's garbage landing in a batch moves its time by a quarter as much.
 */
const fastFanOutRuns = 4;

/** Fan-out: 10 000 calls, at most 8 in flight, handlers that yield one macrotask turn. */
export function fanOutCases(stacks: Stacks): BenchCase[] {
  const calls = Array.from({ length: fanOutCalls }, (_, i) => ({
    name: toolNames.tick,
    args: { query: `q${i % 100}`, limit: i },
  }));
  const allOk = (outcomes: ReadonlyArray<Outcome | PlainOutcome>, id: string) => {
    if (outcomes.length !== fanOutCalls) throw new Error(`${id}: ${outcomes.length} outcomes`);
    for (const outcome of outcomes) expectOk(outcome, id);
  };
  const promiseAll = (id: string, label: string, through: CallThrough): BenchCase => ({
    id,
    label,
    opsPerBatch: 1,
    unitsPerOp: fanOutCalls,
    async batch(n) {
      for (let i = 0; i < n; i++) {
        allOk(await Promise.all(calls.map((call) => through(call.name, call.args))), id);
      }
    },
  });
  return [
    {
      id: 'pool',
      label: `plain pool of ${fanOutConcurrency} workers (floor)`,
      opsPerBatch: fastFanOutRuns,
      unitsPerOp: fanOutCalls,
      async batch(n) {
        for (let i = 0; i < n; i++) {
          const results = new Array<number>(fanOutCalls);
          let next = 0;
          const worker = async () => {
            while (next < calls.length) {
              const index = next++;
              results[index] = await tickHandler((calls[index] as (typeof calls)[number]).args);
            }
          };
          await Promise.all(Array.from({ length: fanOutConcurrency }, worker));
          if (results[fanOutCalls - 1] !== fanOutCalls - 1) throw new Error('pool: missing result');
        }
      },
    },
    {
      id: 'ours',
      label: `tool-dispatcher gatherBounded (concurrency ${fanOutConcurrency})`,
      opsPerBatch: fastFanOutRuns,
      unitsPerOp: fanOutCalls,
      async batch(n) {
        for (let i = 0; i < n; i++) {
          allOk(await stacks.ours.gatherBounded(calls, { concurrency: fanOutConcurrency }), 'ours');
        }
      },
    },
    promiseAll('cockatiel', 'cockatiel stack, Promise.all over bulkhead(8)', stacks.cockatiel),
    promiseAll('pStack', 'p-stack, Promise.all over p-limit(8)', stacks.pStack),
  ];
}

/** Failure paths: a retried transient failure with zero backoff, and an attempt timing out. */
export function failureCases(stacks: Stacks): BenchCase[] {
  return [
    sequential('success', 'default stack (zero backoff), success', () =>
      stacks.oursZeroBackoff.dispatch(toolNames.immediate, smallArgs),
    ),
    {
      id: 'transient',
      label: 'default stack, transient then success (0 ms backoff)',
      async batch(n) {
        for (let i = 0; i < n; i++) {
          const outcome = await stacks.oursZeroBackoff.dispatch(toolNames.flaky, smallArgs);
          expectOk(outcome, 'transient');
          if (outcome.ok && outcome.attempts !== 2) throw new Error('transient: expected 2 attempts');
        }
      },
    },
    sequential('pStackTransient', 'p-stack, transient then success (minTimeout 0)', () =>
      stacks.pStackZeroBackoff(toolNames.flaky, smallArgs),
    ),
    {
      id: 'timeoutManual',
      label: 'default stack, attempt times out (manual clock: CPU cost only)',
      async batch(n) {
        for (let i = 0; i < n; i++) {
          const outcome = await stacks.oursManualTimeout.dispatch(toolNames.hangingManual, smallArgs);
          expectKind(outcome, 'timeout', 'timeoutManual');
        }
      },
    },
    {
      id: 'timeoutReal',
      label: 'default stack, attempt times out (real 1 ms timer)',
      async batch(n) {
        for (let i = 0; i < n; i++) {
          const outcome = await stacks.ours.dispatch(toolNames.hanging, smallArgs, { timeoutMs: 1 });
          expectKind(outcome, 'timeout', 'timeoutReal');
        }
      },
    },
    {
      id: 'timerFloor',
      label: 'handler aborted by a bare 1 ms timer (floor for the above)',
      async batch(n) {
        for (let i = 0; i < n; i++) {
          const controller = new AbortController();
          // A reason is given, as the timeout layer does, so abort() builds no DOMException.
          const timer = setTimeout(() => controller.abort(timerReason), 1);
          await hangingHandler(smallArgs, { signal: controller.signal });
          clearTimeout(timer);
        }
      },
    },
  ];
}
