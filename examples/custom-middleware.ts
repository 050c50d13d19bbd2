// A third-party middleware, a per-tool rate limit, inserted into the default stack.
//
//   npx tsx examples/custom-middleware.ts
//
// The clock is injected, so the run is instant and prints the same thing every time.

import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  DispatchError,
  harnessStep,
  toToolMessage,
  ToolRegistry,
  type DispatchContext,
  type Middleware,
  type Next,
  type Outcome,
} from '../index.js';

/** Options for `rateLimit`. */
export interface RateLimitOptions {
  /**
   * Dispatches each tool may make per window.
   * @default 10
   */
  limit?: number;
  /**
   * Per-tool overrides of `limit`, by tool name.
   * @default {}
   */
  limits?: Record<string, number>;
  /**
   * The window length in milliseconds.
   * @default 1_000
   */
  windowMs?: number;
  /**
   * The time source.
   * @default Date.now
   */
  now?: () => number;
}

// The layer declares its event, so `ctx.emit` checks the details and a listener reads them typed
// once it has narrowed on `type`. In your own code the module is 'tool-dispatcher'.
declare module '../index.js' {
  interface DispatchEventDetails {
    /** A call was turned away: the tool's `limit` per `windowMs` is spent for `retryAfterMs` more. */
    'rate_limit.rejected': {
      /** The calls allowed per window. */
      readonly limit: number;
      /** The window length in milliseconds. */
      readonly windowMs: number;
      /** The time left in the window, in milliseconds. */
      readonly retryAfterMs: number;
    };
  }
}

/**
 * Lets each tool run at most `limit` dispatches per fixed window; the next one fails at once
 * with kind `rate_limited` and `retryAfterMs` (the time left in the window).
 *
 * @example
 * rateLimit({ limits: { 'search.web': 2 }, windowMs: 60_000 });
 */
export function rateLimit(options: RateLimitOptions = {}): Middleware {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`rateLimit() options must be an object, got ${String(options)}`);
  }
  const { limit = 10, limits = {}, windowMs = 1_000, now = Date.now } = options;
  requireLimit('limit', limit);
  for (const [tool, toolLimit] of Object.entries(limits)) requireLimit(`limits["${tool}"]`, toolLimit);
  if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs <= 0) {
    throw new TypeError(`windowMs must be a finite number > 0, got ${String(windowMs)}`);
  }
  if (typeof now !== 'function') throw new TypeError(`now must be a function, got ${typeof now}`);

  // A Map, so a tool named "constructor" never reads Object.prototype.
  const limitOf = new Map(Object.entries(limits));
  // One small entry per tool that has been called: bounded by the registry's size.
  const windows = new Map<string, { startedAt: number; count: number }>();

  return async function rateLimit(ctx: DispatchContext, next: Next): Promise<void> {
    const tool = ctx.tool?.name ?? ctx.toolName;
    const max = limitOf.get(tool) ?? limit;
    const time = now();
    let window = windows.get(tool);
    if (window === undefined || time - window.startedAt >= windowMs) {
      window = { startedAt: time, count: 0 };
      windows.set(tool, window);
    }
    if (window.count >= max) {
      const retryAfterMs = window.startedAt + windowMs - time;
      ctx.emit('rate_limit.rejected', { limit: max, windowMs, retryAfterMs });
      throw new DispatchError('rate_limited', `"${tool}" may run at most ${max} times per ${windowMs} ms`, {
        attempts: ctx.attempt,
        retryAfterMs,
      });
    }
    window.count += 1;
    return next();
  };
}

function requireLimit(name: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new TypeError(`${name} must be an integer >= 1, got ${String(value)}`);
  }
}

/** Puts `layer` just before the layer named `name` (factories return named functions). */
function insertBefore(stack: Middleware[], name: string, layer: Middleware): Middleware[] {
  const index = stack.findIndex((existing) => existing.name === name);
  if (index === -1) throw new Error(`No layer named ${name} in the stack`);
  stack.splice(index, 0, layer);
  return stack;
}

// --- The demo ------------------------------------------------------------------------------

let clock = 0;
let searches = 0;

const registry = new ToolRegistry()
  .register({
    name: 'search.web',
    description: 'Search the web',
    inputSchema: z.object({ query: z.string() }),
    idempotent: true,
    handler: async ({ query }) => {
      searches += 1;
      return { hits: [`${query}: top result`] };
    },
  })
  .register({
    name: 'db.get_user',
    description: 'Read a user by id',
    inputSchema: z.object({ id: z.string() }),
    idempotent: true,
    handler: ({ id }) => ({ id, name: 'Ada' }),
  });

// Inside idempotency, so cache hits and same-key followers cost nothing; outside
// concurrencyLimit, so a limited call is turned away without queueing for a slot.
const stack = insertBefore(
  defaultStack({ registry }),
  'concurrencyLimit',
  rateLimit({ limits: { 'search.web': 2 }, windowMs: 60_000, now: () => clock }),
);
console.log('stack:', stack.map((layer) => layer.name).join(' → '));

const dispatcher = createDispatcher(stack, {
  onEvent: (event) => {
    if (event.type === 'rate_limit.rejected') {
      console.log(`  event ${event.type}: limit ${event.limit}, retry after ${event.retryAfterMs} ms`);
    }
  },
});

function show(label: string, outcome: Outcome): void {
  const { hook, replan } = harnessStep(outcome);
  const attempts = outcome.ok
    ? `ok, attempts ${outcome.attempts}`
    : `${outcome.kind}, attempts ${outcome.attempts}`;
  console.log(`${label.padEnd(34)} ${attempts.padEnd(28)} hook ${hook}, replan ${replan}`);
  console.log(`  tool message: ${toToolMessage(outcome)}`);
}

const sameCall = { idempotencyKey: 'turn-1:call-1' };
show(
  'search "agents" (key turn-1:call-1)',
  await dispatcher.dispatch('search.web', { query: 'agents' }, sameCall),
);
show('same key again (cache hit)', await dispatcher.dispatch('search.web', { query: 'agents' }, sameCall));
show('search "koa"', await dispatcher.dispatch('search.web', { query: 'koa' }));
show('search "onion" (third in window)', await dispatcher.dispatch('search.web', { query: 'onion' }));
show('db.get_user (its own window)', await dispatcher.dispatch('db.get_user', { id: 'u1' }));

clock += 60_000;
show('search "onion", 60 s later', await dispatcher.dispatch('search.web', { query: 'onion' }));
console.log(`search handler ran ${searches} times`);

try {
  rateLimit({ limit: 0 });
} catch (error) {
  console.log(`rateLimit({ limit: 0 }) throws ${String(error)}`);
}
