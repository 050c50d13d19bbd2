// One process of bench/ablate.ts: one build of the library, its fan-out against the 8-worker pool.
//   node --import tsx bench/ablate-child.ts path/to/src/index.js
// Prints one JSON line: the median over rounds of (pool time / gatherBounded time).

import { pathToFileURL } from 'node:url';
import type { Library } from './library.js';
import { argsSchema, tickHandler } from './stacks.js';
import { fanOutCalls, fanOutConcurrency } from './suites.js';

const entry = process.argv[2];
if (entry === undefined) throw new TypeError('usage: bench/ablate-child.ts path/to/src/index.js');
const { ToolRegistry, createDispatcher, defaultStack } = (await import(pathToFileURL(entry).href)) as Library;
const registry = new ToolRegistry().register({
  name: 'bench.tick',
  inputSchema: argsSchema,
  handler: tickHandler,
});
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

const ratios: number[] = [];
for (let round = 0; round < 50; round++) {
  const poolNs = await timed(pool);
  const oursNs = await timed(() => dispatcher.gatherBounded(calls, { concurrency: fanOutConcurrency }));
  if (round >= 10) ratios.push(poolNs / oursNs);
}
ratios.sort((a, b) => a - b);
process.stdout.write(`${JSON.stringify({ ratio: ratios[ratios.length >> 1] })}\n`);
