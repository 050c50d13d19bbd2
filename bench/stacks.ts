// The tools and the stacks the benchmarks compare: ours, a cockatiel 3 stack and a p-limit/p-retry/p-timeout stack.

import {
  ExponentialBackoff,
  TimeoutStrategy,
  bulkhead,
  handleAll,
  retry as cockatielRetry,
  timeout as cockatielTimeout,
  wrap,
} from 'cockatiel';
import pLimit from 'p-limit';
import pRetry from 'p-retry';
import pTimeout, { TimeoutError } from 'p-timeout';
import { z } from 'zod';
import type { Library } from './library.js';
import type { Clock, Dispatcher, Middleware, ToolContext } from '../index.js';

/** The args every per-dispatch case sends. */
export const smallArgs = { query: 'typescript dispatcher', limit: 10 };

/** The schema of every benchmark tool: small args `{ query, limit }`. */
export const argsSchema = z.object({ query: z.string(), limit: z.number().int() });
type Args = z.infer<typeof argsSchema>;
type Handler = (args: Args, ctx: ToolContext) => unknown;

/** Resolves at once: the per-dispatch overhead cases. */
export const immediateHandler = async (args: Args): Promise<number> => args.query.length + args.limit;

/** Yields one macrotask turn: the fan-out cases. */
export const tickHandler = async (args: Args): Promise<number> => {
  await new Promise(setImmediate);
  return args.limit;
};

/** Never finishes by itself; resolves once its signal aborts: the timeout path. */
export const hangingHandler = (_args: Args, ctx: Pick<ToolContext, 'signal'>): Promise<number> =>
  new Promise((resolve) => {
    ctx.signal.addEventListener('abort', () => resolve(-1), { once: true });
  });

/**
 * A clock whose timers fire only when `fire()` is called: lets a benchmark take the timeout path
 * without waiting for a real timer, so it measures the path's own CPU cost.
 */
export function manualClock(): Clock & { fire(): void } {
  const timers = new Map<number, () => void>();
  let nextHandle = 0;
  return {
    now: () => Date.now(),
    setTimeout(callback) {
      timers.set(++nextHandle, callback);
      return nextHandle;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    fire() {
      const due = [...timers.values()];
      timers.clear();
      for (const callback of due) callback();
    },
  };
}

/** A minimal outcome for the competitor stacks, shaped like ours. */
export type PlainOutcome =
  | { ok: true; result: unknown; attempts: number }
  | { ok: false; kind: string; error: unknown };

/** Runs one call by tool name through a stack, always resolving to an outcome. */
export type CallThrough = (name: string, args: unknown) => Promise<PlainOutcome>;

interface PlainTool {
  schema: typeof argsSchema;
  handler: Handler;
}

/** Every benchmark stack, ready to call. */
export interface Stacks {
  /** `createDispatcher(defaultStack({ registry }))`. */
  ours: Dispatcher;
  /** Another default-stack dispatcher, so the key-hit case has a cache of its own. */
  oursOwnCache: Dispatcher;
  /** `createDispatcher([passThrough, ...defaultStack({ registry })])`: a layer of the caller's in front. */
  oursBehindLayer: Dispatcher;
  /**
   * The MCP proxy's stack: `defaultStack({ registry, breaker: circuitBreaker() })` (the proxy also
   * sets its retry policy and concurrency, which change no layer's place).
   */
  oursWithBreaker: Dispatcher;
  /** The layers of `ours`. */
  defaultLayers: readonly Middleware[];
  /** The default stack with `retry({ baseDelayMs: 0 })`. */
  oursZeroBackoff: Dispatcher;
  /** The default stack whose timeout layer runs on a manual clock (`timeoutClock.fire()`). */
  oursManualTimeout: Dispatcher;
  timeoutClock: ReturnType<typeof manualClock>;
  /** lookup + zod safeParse + wrap(bulkhead(8), retry(3 executions), timeout(30 s, cooperative)). */
  cockatiel: CallThrough;
  /** The same cockatiel stack with `abortOnReturn: false`: how much of its cost is the abort. */
  cockatielNoAbortOnReturn: CallThrough;
  /** lookup + zod safeParse + p-limit(8) + p-retry(retries 2) + p-timeout(30 s) + an AbortController per attempt. */
  pStack: CallThrough;
  /** The p-stack with `minTimeout: 0` (zero backoff), for the transient-retry path. */
  pStackZeroBackoff: CallThrough;
  /** The tools by name, for the direct-call floors. */
  tools: ReadonlyMap<string, PlainTool>;
}

/** Tool names. */
export const toolNames = {
  immediate: 'bench.immediate',
  tick: 'bench.tick',
  flaky: 'bench.flaky',
  hanging: 'bench.hanging',
  hangingManual: 'bench.hanging_manual',
} as const;

/** Builds every stack over the same tools, with the library under test. */
export function createStacks(lib: Library): Stacks {
  const { ToolRegistry, TransientError, circuitBreaker, createDispatcher, defaultStack } = lib;
  // Fails its first attempt with a `TransientError`, then succeeds: the retry path.
  const flakyHandler = async (args: Args, ctx: Pick<ToolContext, 'attempt'>): Promise<number> => {
    if (ctx.attempt === 1) throw new TransientError('backend busy');
    return args.limit;
  };
  const timeoutClock = manualClock();
  // Hangs like `hangingHandler`, and lets the manual clock fire once the attempt is waiting (the
  // timeout layer arms an attempt's timer at the end of the tick, hence nextTick).
  const hangingManualHandler = (args: Args, ctx: Pick<ToolContext, 'signal'>): Promise<number> => {
    const hanging = hangingHandler(args, ctx);
    process.nextTick(timeoutClock.fire);
    return hanging;
  };
  const plainTools = new Map<string, PlainTool>([
    [toolNames.immediate, { schema: argsSchema, handler: immediateHandler }],
    [toolNames.tick, { schema: argsSchema, handler: tickHandler }],
    [toolNames.flaky, { schema: argsSchema, handler: flakyHandler }],
    [toolNames.hanging, { schema: argsSchema, handler: hangingHandler }],
    [toolNames.hangingManual, { schema: argsSchema, handler: hangingManualHandler }],
  ]);

  const registry = new ToolRegistry();
  for (const [name, tool] of plainTools) {
    // Not idempotent: a timed-out attempt is not retried, so the timeout case times one attempt.
    registry.register({ name, inputSchema: tool.schema, handler: tool.handler });
  }

  const defaultLayers = defaultStack({ registry });
  const ours = createDispatcher(defaultLayers);
  const oursWithBreaker = createDispatcher(defaultStack({ registry, breaker: circuitBreaker() }));
  const oursOwnCache = createDispatcher(defaultStack({ registry }));
  const oursBehindLayer = createDispatcher([
    function passThrough(_ctx, next) {
      return next();
    },
    ...defaultStack({ registry }),
  ]);
  const oursZeroBackoff = createDispatcher(defaultStack({ registry, retry: { baseDelayMs: 0 } }));
  const oursManualTimeout = createDispatcher(defaultStack({ registry, timeout: { clock: timeoutClock } }));

  const cockatielPolicy = (abortOnReturn: boolean) =>
    wrap(
      bulkhead(8, Number.MAX_SAFE_INTEGER),
      cockatielRetry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff() }),
      cockatielTimeout(30_000, { strategy: TimeoutStrategy.Cooperative, abortOnReturn }),
    );
  const viaCockatiel =
    (policy: ReturnType<typeof cockatielPolicy>): CallThrough =>
    async (name, args) => {
      const tool = plainTools.get(name);
      if (tool === undefined) return { ok: false, kind: 'not_found', error: name };
      const parsed = tool.schema.safeParse(args);
      if (!parsed.success) return { ok: false, kind: 'schema', error: parsed.error };
      let attempts = 0;
      try {
        const result = await policy.execute(({ signal, attempt }) => {
          attempts = attempt + 1;
          return tool.handler(parsed.data, {
            signal,
            attempt: attempts,
            idempotencyKey: undefined,
            deadline: Infinity,
            progress: noProgress,
            callId: name,
          });
        });
        return { ok: true, result, attempts };
      } catch (error) {
        return { ok: false, kind: 'failed', error };
      }
    };

  const limit = pLimit(8);
  const viaP =
    (minTimeout: number): CallThrough =>
    async (name, args) => {
      const tool = plainTools.get(name);
      if (tool === undefined) return { ok: false, kind: 'not_found', error: name };
      const parsed = tool.schema.safeParse(args);
      if (!parsed.success) return { ok: false, kind: 'schema', error: parsed.error };
      let attempts = 0;
      try {
        const result = await limit(() =>
          pRetry(
            (attemptNumber) => {
              attempts = attemptNumber;
              // The other two stacks hand each attempt a signal that fires on timeout; so does this one.
              const controller = new AbortController();
              const running = Promise.resolve(
                tool.handler(parsed.data, {
                  signal: controller.signal,
                  attempt: attemptNumber,
                  deadline: Infinity,
                  progress: noProgress,
                  idempotencyKey: undefined,
                  callId: name,
                }),
              );
              return pTimeout(running, { milliseconds: 30_000 }).catch((error: unknown) => {
                if (error instanceof TimeoutError) controller.abort(error);
                throw error;
              });
            },
            { retries: 2, minTimeout },
          ),
        );
        return { ok: true, result, attempts };
      } catch (error) {
        return { ok: false, kind: 'failed', error };
      }
    };

  return {
    ours,
    oursOwnCache,
    oursBehindLayer,
    oursWithBreaker,
    defaultLayers,
    oursZeroBackoff,
    oursManualTimeout,
    timeoutClock,
    cockatiel: viaCockatiel(cockatielPolicy(true)),
    cockatielNoAbortOnReturn: viaCockatiel(cockatielPolicy(false)),
    pStack: viaP(1_000),
    pStackZeroBackoff: viaP(0),
    tools: plainTools,
  };
}

function noProgress(): void {}
