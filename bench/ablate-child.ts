// One process of bench/ablate.ts: one build of the library, timed per sequential dispatch and in
// fan-out against the 8-worker pool.
//   node --import tsx bench/ablate-child.ts path/to/src/index.js
// Prints one JSON line: the medians over rounds of ns per dispatch and of (pool time / gatherBounded time).

import { pathToFileURL } from 'node:url';
import type { Library } from './library.js';
import { argsSchema, immediateHandler, tickHandler } from './stacks.js';
import { fanOutCalls, fanOutConcurrency } from './suites.js';

const entry = process.argv[2];
if (entry === undefined) throw new TypeError('usage: bench/ablate-child.ts path/to/src/index.js');
const { ToolRegistry, createDispatcher, defaultStack } = (await import(pathToFileURL(entry).href)) as Library;
const registry = new ToolRegistry()
  .register({ name: 'bench.tick', inputSchema: argsSchema, handler: tickHandler })
  .register({ name: 'bench.immediate', inputSchema: argsSchema, handler: immediateHandler });
const dispatcher = createDispatcher(defaultStack({ registry }));
const calls = Array.from({ length: fanOutCalls }, (_, i) => ({
  name: 'bench.tick',
  args: { query: `q${i % 100}`, limit: i },
}));

const pool = async () => {
  let next = 0;
  const worker = async () => {
    while (next < calls.length) {
      const call = calls[next++] as (typeof calls)[number];
      await tickHandler(call.args);
    }
  };
  await Promise.all(Array.from({ length: fanOutConcurrency }, worker));
};
const timed = async (run: () => Promise<unknown>) => {
  const start = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - start);
};
const dispatches = 20_000;
const sequential = async () => {
  const args = { query: 'q', limit: 1 };
  for (let i = 0; i < dispatches; i++) {
    const outcome = await dispatcher.dispatch('bench.immediate', args);
    if (!outcome.ok) throw new Error(outcome.message);
  }
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
const fanOuts: number[] = [];
const dispatchNs: number[] = [];
for (let round = 0; round < 50; round++) {
  const poolNs = await timed(pool);
  const oursNs = await timed(() => dispatcher.gatherBounded(calls, { concurrency: fanOutConcurrency }));
  const sequentialNs = await timed(sequential);
  if (round < 10) continue;
  fanOuts.push(poolNs / oursNs);
  dispatchNs.push(sequentialNs / dispatches);
}
process.stdout.write(`${JSON.stringify({ dispatchNs: median(dispatchNs), fanOut: median(fanOuts) })}\n`);
