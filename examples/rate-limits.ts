// Rate limits and cost budgets: 12 parallel calls against a backend that allows 5 requests/s and
// answers 429 with `Retry-After`, behind one shared bucket; and a tenant's token budget.

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type DispatchEvent } from '../index.js';

// A backend allowing 5 requests per second, answering as `fetch` would (a `Response`).
const started = Date.now();
const seconds = new Map<number, number>();
let tooMany = 0;
function backend(): Response {
  const second = Math.floor((Date.now() - started) / 1_000);
  const count = (seconds.get(second) ?? 0) + 1;
  seconds.set(second, count);
  if (count > 5) {
    tooMany += 1;
    return new Response('slow down', { status: 429, headers: { 'retry-after': '1' } });
  }
  return new Response('ok');
}

const registry = new ToolRegistry()
  .register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string() }),
    handler: async ({ query }) => {
      const response = backend();
      // The attempt step reads the 429 and its Retry-After (classifyRateLimit).
      if (!response.ok) throw response;
      return `${query}: ${await response.text()}`;
    },
  })
  .register({
    name: 'llm.summarize',
    inputSchema: z.object({ text: z.string() }),
    cost: ({ text }) => 10 + text.length, // reserved before the call
    settle: (result: { tokens: number }) => result.tokens, // the actual cost, after it
    handler: ({ text }) => ({ summary: text.slice(0, 10), tokens: 5 + Math.ceil(text.length / 4) }),
  });

const events: DispatchEvent[] = [];
const dispatcher = createDispatcher(
  defaultStack({
    registry,
    rateLimit: { key: (ctx) => ctx.toolName, rate: 6, intervalMs: 1_000, maxWaitMs: 10_000 },
    windowedBudget: { key: (ctx) => ctx.options.tenant, limit: 80, windowMs: 60_000 },
  }),
  { onEvent: (event) => events.push(event) },
);

const searches = await Promise.all(
  Array.from({ length: 12 }, (_, i) =>
    dispatcher.dispatch('search.web', { query: `q${i}` }, { tenant: 'acme' }),
  ),
);
console.log(`searches served: ${searches.filter((outcome) => outcome.ok).length} of 12`);
console.log(`429s seen: ${tooMany}`);
console.log(`most served in one backend second: ${Math.min(5, Math.max(...seconds.values()))}`);
console.log(`rate_limit.debit events: ${events.filter((event) => event.type === 'rate_limit.debit').length}`);

const text = 'x'.repeat(40);
for (let i = 0; i < 4; i++) {
  const outcome = await dispatcher.dispatch('llm.summarize', { text }, { tenant: 'globex' });
  console.log(
    `summary ${i + 1} for globex: ${outcome.ok ? 'ok' : `${outcome.kind} (retry after ${outcome.retryAfterMs} ms)`}`,
  );
}
