// Our registry as an MCP server over stdio: point any MCP host at
// `node --import tsx examples/mcp-server.ts` and its model gets these tools, each call going
// through the dispatcher (validation, timeouts, retries, dedupe by _meta key, one envelope).
//
// The rule of a stdio server: stdout carries the protocol and nothing else. Every log line goes
// to stderr (console.error), never console.log / console.info.

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import {
  ToolRegistry,
  TransientError,
  createDispatcher,
  defaultStack,
  logging,
  type Logger,
} from '../index.js';
import { createMcpServer } from '../integrations/mcp/index.js';

let searches = 0;
let charges = 0;

const registry = new ToolRegistry()
  .register({
    name: 'docs.search',
    description: 'Search the product docs; returns matching page titles.',
    inputSchema: z.object({ query: z.string().min(1), limit: z.number().int().min(1).max(10).default(3) }),
    idempotent: true,
    handler: ({ query, limit }) => {
      // Every third search hits a busy backend once; the dispatcher retries it for the client.
      if (++searches % 3 === 0) throw new TransientError('search backend busy');
      return { hits: Array.from({ length: limit }, (_, i) => `${query}: page ${i + 1}`) };
    },
  })
  .register({
    name: 'billing.charge',
    description:
      'Charge a card. Not idempotent: pass _meta["tool-dispatcher/idempotencyKey"] to make retries safe.',
    inputSchema: z.object({ customer: z.string(), cents: z.number().int().positive() }),
    handler: ({ customer, cents }) => ({ chargeId: `ch_${++charges}`, customer, cents }),
  })
  .register({
    name: 'reports.build',
    description: 'Build a report in a few steps, reporting progress.',
    inputSchema: z.object({ steps: z.number().int().min(1).max(20).default(3) }),
    timeoutMs: 10_000,
    handler: async ({ steps }, ctx) => {
      for (let step = 1; step <= steps; step++) {
        // Reported as each step starts: the SDK client handles a notification a microtask after
        // a response in the same read, so a note sent right before the result can be dropped.
        ctx.progress(step - 1, steps, `step ${step} of ${steps}`);
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, 20);
          ctx.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              reject(ctx.signal.reason);
            },
            { once: true },
          );
        });
      }
      return { report: `built in ${steps} steps` };
    },
  });

const stderrLogger: Logger = {
  debug: console.error,
  info: console.error,
  warn: console.error,
  error: console.error,
};
const dispatcher = createDispatcher([
  logging({ logger: stderrLogger, level: 'info' }),
  ...defaultStack({ registry }),
]);

const server = createMcpServer({
  registry,
  dispatcher,
  info: { name: 'tool-dispatcher-example', version: '1.0.0' },
  hints: {
    'docs.search': { readOnlyHint: true, openWorldHint: false },
    'billing.charge': { destructiveHint: false },
  },
});
await server.connect(new StdioServerTransport());
console.error('tool-dispatcher example MCP server ready on stdio');
