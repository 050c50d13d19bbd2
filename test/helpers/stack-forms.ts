// One tool behind the default stack, run fused (as defaultStack() comes), as a fused tail (behind
// a pass-through layer of the caller's own) or as an onion (the same layers, the first one wrapped
// so that they no longer match the registered group): how the fused stack is compared.

import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type DefaultStackOptions,
  type DispatchEvent,
  type Middleware,
  type ToolHandler,
} from '../../index.js';

/** The tool's schema: `{ n: number }`. */
export const calcSchema = z.object({ n: z.number() });
/** The tool's args. */
export type CalcArgs = z.infer<typeof calcSchema>;

/** Options for `buildStack`. */
export interface StackFormOptions {
  /** Run the layers as an onion instead of fused. */
  onion?: boolean;
  /** Put a pass-through layer in front, so the default stack runs as a fused tail. */
  tail?: boolean;
  /** Options for the default stack's layers. */
  stack?: Omit<DefaultStackOptions, 'registry'>;
  idempotent?: boolean;
  timeoutMs?: number;
  inputSchema?: z.ZodType<CalcArgs>;
}

/** A dispatcher for a `calc` tool, the events it emitted, listeners to add, and its slot load. */
export function buildStack(handler: ToolHandler<CalcArgs>, options: StackFormOptions = {}) {
  const {
    onion = false,
    tail = false,
    stack = {},
    idempotent = false,
    timeoutMs,
    inputSchema = calcSchema,
  } = options;
  const registry = new ToolRegistry().register({
    name: 'calc',
    inputSchema,
    idempotent,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    handler,
  });
  const events: DispatchEvent[] = [];
  const listeners: Array<(event: DispatchEvent) => void> = [];
  const layers = defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 10 }, ...stack });
  const passThrough: Middleware = (_ctx, next) => next();
  const [first, ...rest] = layers as [Middleware, ...Middleware[]];
  const unfused: Middleware = (ctx, next) => first(ctx, next);
  const stackForm = onion ? [unfused, ...rest] : tail ? [passThrough, ...layers] : layers;
  const dispatcher = createDispatcher(stackForm, {
    onEvent: (event) => {
      events.push(event);
      for (const listener of listeners) listener(event);
    },
  });
  const load = () => (layers[5] as Middleware & { load(): { running: number; queued: number } }).load();
  return { dispatcher, events, listeners, layers, load };
}

/** A native promise given a `then` of its own (Promise.resolve() hands such a promise back as it is). */
export function withOwnThen<T>(promise: Promise<T>, then: (...args: never[]) => unknown): Promise<T> {
  Object.defineProperty(promise, 'then', { value: then, configurable: true });
  return promise;
}
