// One tool behind the default stack, as defaultStack() comes or behind a pass-through layer of the
// caller's own: a layer in front must change nothing about how a call ends.

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
  /** Put a pass-through layer of the caller's own in front of the default stack. */
  behindLayer?: boolean;
  /** Options for the default stack's layers. */
  stack?: Omit<DefaultStackOptions, 'registry'>;
  idempotent?: boolean;
  timeoutMs?: number;
  inputSchema?: z.ZodType<CalcArgs>;
}

/** A dispatcher for a `calc` tool, the events it emitted, listeners to add, and its slot load. */
export function buildStack(handler: ToolHandler<CalcArgs>, options: StackFormOptions = {}) {
  const {
    behindLayer = false,
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
  const dispatcher = createDispatcher(behindLayer ? [passThrough, ...layers] : layers, {
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
