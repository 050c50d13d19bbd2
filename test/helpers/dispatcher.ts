// Small factories for tests: a registry with one tool, and a default dispatcher that records events.

import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type DefaultStackOptions,
  type DispatchEvent,
  type ToolHandler,
} from '../../index.js';

/** A schema most tests use. */
export const querySchema = z.object({ query: z.string(), limit: z.number().optional() });

/** Options for `setup`. */
export interface SetupOptions {
  handler?: ToolHandler<z.infer<typeof querySchema>>;
  idempotent?: boolean;
  timeoutMs?: number;
  stack?: Omit<DefaultStackOptions, 'registry'>;
}

/** A registry with `search.web`, a default-stack dispatcher, and the events it emitted. */
export function setup(options: SetupOptions = {}) {
  const calls: Array<z.infer<typeof querySchema>> = [];
  const handler: ToolHandler<z.infer<typeof querySchema>> =
    options.handler ?? ((args) => `result:${args.query}`);
  const registry = new ToolRegistry().register({
    name: 'search.web',
    description: 'Search the web',
    inputSchema: querySchema,
    idempotent: options.idempotent ?? true,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    handler: (args, ctx) => {
      calls.push(args);
      return handler(args, ctx);
    },
  });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(
    defaultStack({ registry, retry: { random: () => 0 }, ...options.stack }),
    { onEvent: (event) => events.push(event) },
  );
  const eventTypes = () => events.map((event) => event.type);
  return { registry, dispatcher, calls, events, eventTypes };
}
