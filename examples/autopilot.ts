// Autopilot on a straggling tool: 3 % of a search API's answers take 10–50× its 10 ms median.
// The same 600 calls run through today's static stack and through `autopilot()`, which hedges the
// tool (declared idempotent): once an attempt has run past the tool's live p90, a second attempt
// starts beside it, within 10 % extra calls, and the first answer wins. Prints the latencies as a
// table.
//
//   npm run demo:autopilot

import { z } from 'zod';
import { autopilot, createDispatcher, defaultStack, type Middleware, ToolRegistry } from '../index.js';

const calls = 600;
const warmUp = 100;
const inFlight = 8;

// Seeded, so every run straggles on the same calls and attempts.
function randomFor(call: number, attempt: number): () => number {
  let state = (Math.imul(call + 1, 0x9e3779b1) ^ Math.imul(attempt + 1, 0x85ebca6b)) >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
}

let toolCalls = 0;
const registry = new ToolRegistry().register({
  name: 'search.web',
  inputSchema: z.object({ call: z.number().int() }),
  // Safe to repeat: the only kind of tool the autopilot hedges.
  idempotent: true,
  handler: ({ call }, { attempt, signal }) => {
    toolCalls += 1;
    const random = randomFor(call, attempt);
    const straggles = random() < 0.03;
    const latencyMs = 10 * (0.8 + 0.4 * random()) * (straggles ? 10 + 40 * random() : 1);
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(`results for call ${call}`);
      }, latencyMs);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  },
});

// A 10 ms tool retries after 10 ms, not the default 100 ms: the same in both stacks.
const retry = { baseDelayMs: 10 };

interface Run {
  readonly latencies: number[];
  readonly toolCalls: number;
}

async function run(stack: Middleware[]): Promise<Run> {
  const dispatcher = createDispatcher(stack);
  const latencies: number[] = [];
  const callsBefore = toolCalls;
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const call = next++;
      const startedAt = performance.now();
      const outcome = await dispatcher.dispatch('search.web', { call });
      if (!outcome.ok) throw new Error(`call ${call}: ${outcome.kind}: ${outcome.message}`);
      // The warm-up calls are the autopilot's samples; both runs are judged on the calls after.
      if (call >= warmUp) latencies.push(performance.now() - startedAt);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { latencies: latencies.sort((a, b) => a - b), toolCalls: toolCalls - callsBefore };
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

const pilot = autopilot({ hedge: { quantile: 0.9, maxExtraLoad: 0.1, minSamples: warmUp } });
const before = await run(defaultStack({ registry, retry }));
const after = await run(defaultStack({ registry, retry, autopilot: pilot }));

const row = (label: string, { latencies, toolCalls: made }: Run) =>
  `${label.padEnd(18)}${[0.5, 0.99, 0.999].map((q) => `${quantile(latencies, q).toFixed(0)} ms`.padStart(10)).join('')}${String(made).padStart(12)}`;
console.log(`${calls} calls to search.web (3 % stragglers at 10–50×), ${inFlight} in flight`);
console.log(
  `${''.padEnd(18)}${['p50', 'p99', 'p99.9'].map((name) => name.padStart(10)).join('')}${'tool calls'.padStart(12)}`,
);
console.log(row('static defaults', before));
console.log(row('autopilot', after));
const snapshot = pilot.snapshot('search.web');
const p99Change = 1 - quantile(after.latencies, 0.99) / quantile(before.latencies, 0.99);
console.log(
  `autopilot hedges after ${snapshot.hedgeAfterMs?.toFixed(1)} ms (p90 of ${snapshot.samples} calls); p99 ${(p99Change * 100).toFixed(0)} % lower for ${after.toolCalls - before.toolCalls} more tool calls`,
);
