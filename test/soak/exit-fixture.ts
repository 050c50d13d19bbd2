// A workload that leaves cached keys, an open circuit, a timed-out hung handler and aborted calls
// behind, then returns without process.exit(): the process must still exit on its own.
//
//   node --import tsx test/soak/exit-fixture.ts

import { z } from 'zod';
import {
  budgetGuard,
  circuitBreaker,
  concurrencyLimit,
  createDispatcher,
  errorMapping,
  idempotency,
  retry,
  schemaValidation,
  timeout,
  toolLookup,
  ToolRegistry,
  TransientError,
} from '../../index.js';

const args = z.object({ id: z.number() });
const registry = new ToolRegistry()
  .register({
    name: 'kv.get',
    inputSchema: args,
    idempotent: true,
    handler: ({ id }) => new Promise((resolve) => setTimeout(() => resolve(`value ${id}`), 5)),
  })
  .register({
    name: 'flaky.op',
    inputSchema: args,
    handler: () => {
      throw new TransientError('backend down');
    },
  })
  .register({
    name: 'stuck.op',
    inputSchema: args,
    idempotent: true,
    timeoutMs: 50,
    // Never settles and ignores its signal.
    handler: () => new Promise(() => {}),
  })
  .register({
    name: 'slow.op',
    inputSchema: args,
    handler: () => new Promise((resolve) => setTimeout(() => resolve('late'), 300)),
  });

const breaker = circuitBreaker({ failureThreshold: 2, cooldownMs: 60_000 });
const cache = idempotency({ ttlMs: 10 * 60_000 });
const dispatcher = createDispatcher([
  errorMapping(),
  toolLookup(registry),
  schemaValidation(),
  budgetGuard(),
  breaker,
  cache,
  concurrencyLimit({ max: 4 }),
  retry({ baseDelayMs: 1 }),
  timeout(),
]);

const problems: string[] = [];

// Cached keys, some shared by concurrent callers.
const keyed = await Promise.all(
  Array.from({ length: 30 }, (_, i) =>
    dispatcher.dispatch('kv.get', { id: i % 20 }, { idempotencyKey: `user-${i % 20}` }),
  ),
);
if (!keyed.every((outcome) => outcome.ok)) problems.push('a keyed call failed');
if (cache.size().cached !== 20) problems.push(`expected 20 cached keys, got ${cache.size().cached}`);

// An open circuit with a long cooldown.
await dispatcher.dispatch('flaky.op', { id: 1 });
const turnedAway = await dispatcher.dispatch('flaky.op', { id: 1 });
if (breaker.state('flaky.op') !== 'open') problems.push(`circuit is ${breaker.state('flaky.op')}, not open`);
if (turnedAway.ok || turnedAway.kind !== 'circuit_open') problems.push('an open circuit let a call through');

// A hung handler that times out, and callers that give up while running and while queued.
const controller = new AbortController();
setTimeout(() => controller.abort(), 10);
const hung = dispatcher.dispatch('stuck.op', { id: 1 });
const given = await Promise.all(
  Array.from({ length: 8 }, (_, id) => dispatcher.dispatch('slow.op', { id }, { signal: controller.signal })),
);
const stuck = await hung;
if (stuck.ok || stuck.kind !== 'timeout') problems.push('the hung handler did not time out');
if (!given.every((outcome) => !outcome.ok && outcome.kind === 'cancelled'))
  problems.push('an aborted call was not cancelled');

// A fan-out batch.
const batch = await dispatcher.gatherBounded(
  Array.from({ length: 40 }, (_, id) => ({ name: 'kv.get', args: { id } })),
);
if (batch.length !== 40 || !batch.every((outcome) => outcome.ok)) problems.push('the fan-out batch failed');

if (problems.length > 0) {
  console.error(`exit fixture: ${problems.join('; ')}`);
  process.exitCode = 1;
} else {
  console.log(
    `workload done: ${cache.size().cached} keys cached, circuit ${breaker.state('flaky.op')}; returning without process.exit()`,
  );
}
