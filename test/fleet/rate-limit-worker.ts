// One rate-limit fleet worker: a default stack with rateLimit and windowedBudget on the Redis
// stores, dispatching calls for two tenants until its time is up, logging with fs.writeSync (so
// lines survive a SIGKILL). Lines: `<type> <call> <fields…> <worker> <time ms>`.

import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, TransientError } from '../../index.js';
import { redisRateStore, redisWindowStore } from '../../integrations/redis/index.js';
import type { WindowStore } from '../../index.js';
import {
  connectOnceUp,
  type FleetWorkerConfig,
  now,
  oneLine,
  seededRandom,
  sleep,
  stampedLines,
  workerConfig,
  workerLog,
} from './worker-kit.js';

/** What the runner tells a rate-limit worker (JSON in TD_FLEET_CONFIG). */
export interface RateWorkerConfig extends FleetWorkerConfig {
  /** How long the worker keeps dispatching, in ms. */
  runMs: number;
  rate: number;
  burst: number;
  intervalMs: number;
  maxWaitMs: number;
  limit: number;
  windowMs: number;
  /** How long a backend 429 asks to wait, and how often tenant A's lookups get one. */
  retryAfterMs: number;
  tooManyChance: number;
}

const config = workerConfig<RateWorkerConfig>('TD_FLEET_CONFIG');
const log = workerLog(config.logPath);
const line = stampedLines(log, config.id);
// Which call the code running now belongs to: the store and the handler log under it.
const call = new AsyncLocalStorage<string>();

const rand = seededRandom(config.seed);

// The real Redis window store, each answer logged: which window a call's units were reserved in.
function loggedWindows(inner: WindowStore): WindowStore {
  return {
    reserve: async (key, units, options) => {
      let answer: Awaited<ReturnType<WindowStore['reserve']>>;
      try {
        answer = await inner.reserve(key, units, options);
      } catch (error) {
        // A refusal because Redis came back empty: from here on, no reservation for a window.
        if (/restarted empty/.test(String((error as Error)?.message)))
          line(`X ${call.getStore() ?? '-'} ${key}`);
        throw error;
      }
      if (answer.ok) line(`R ${call.getStore() ?? '-'} ${key} ${answer.window} ${units}`);
      return answer;
    },
    settle: async (key, window, delta, options) => {
      line(`T ${call.getStore() ?? '-'} ${key} ${window} ${delta}`);
      await inner.settle(key, window, delta, options);
    },
  };
}

function tools(): ToolRegistry {
  const started = (tenant: string, tool: string, actual: number) =>
    line(`S ${call.getStore() ?? '-'} ${tenant} ${tool} ${actual}`);
  const work = () => sleep(5 + Math.floor(rand() * 30));
  const tenantArgs = z.object({ tenant: z.string() });
  return new ToolRegistry()
    .register({
      name: 'api.lookup',
      inputSchema: tenantArgs,
      cost: 1,
      handler: async ({ tenant }) => {
        started(tenant, 'lookup', 1);
        if (tenant === 'acme' && rand() < config.tooManyChance) {
          line(`Q ${call.getStore() ?? '-'} ${tenant} ${config.retryAfterMs}`);
          throw new TransientError('429', { retryAfterMs: config.retryAfterMs, rateLimited: true });
        }
        await work();
        return 'ok';
      },
    })
    .register({
      name: 'api.batch',
      inputSchema: tenantArgs,
      cost: 5,
      handler: async ({ tenant }) => {
        started(tenant, 'batch', 5);
        await work();
        return 'ok';
      },
    })
    .register({
      name: 'llm.summarize',
      inputSchema: tenantArgs,
      cost: 5,
      settle: (result: { used: number }) => result.used,
      handler: async ({ tenant }) => {
        const used = 1 + Math.floor(rand() * 5);
        started(tenant, 'summarize', used);
        await work();
        return { used };
      },
    });
}

async function main(): Promise<void> {
  const redis = await connectOnceUp(config.client, config.url, { subscriber: false });
  const stores = { prefix: config.prefix, storeTimeoutMs: 300 };
  const dispatcher = createDispatcher(
    defaultStack({
      registry: tools(),
      rateLimit: {
        key: (ctx) => `t:${String(ctx.options.tenant)}`,
        rate: config.rate,
        burst: config.burst,
        intervalMs: config.intervalMs,
        maxWaitMs: config.maxWaitMs,
        store: redisRateStore(redis.store, stores),
      },
      windowedBudget: {
        key: (ctx) => ctx.options.tenant,
        limit: config.limit,
        windowMs: config.windowMs,
        store: loggedWindows(redisWindowStore(redis.store, stores)),
      },
    }),
    {
      // Logged right before the debit is sent: no sibling should start long after this.
      onEvent: (event) => {
        if (event.type === 'rate_limit.debit')
          line(`G ${call.getStore() ?? '-'} ${String(event.key).slice(2)} ${String(event.retryAfterMs)}`);
      },
    },
  );
  // The runner says when to stop (once it has seen what it needs); runMs only bounds a lost runner.
  let until = now() + config.runMs;
  process.on('message', (message) => {
    if (message === 'stop') until = 0;
  });
  let calls = 0;
  // Tenant acme spends fast (costs 1, 5 and a settled 1..5); globex makes cheap calls only.
  const loop = async (tenant: string, pick: () => string) => {
    while (now() < until) {
      const id = `${config.id}.${++calls}`;
      const tool = pick();
      line(`D ${id} ${tenant} ${tool}`);
      const outcome = await call.run(id, () => dispatcher.dispatch(tool, { tenant }, { tenant }));
      line(
        `O ${id} ${tenant} ${outcome.ok ? 'ok' : outcome.kind} ${outcome.ok ? 0 : (outcome.retryAfterMs ?? 0)}`,
      );
      if (!outcome.ok) {
        const pause = outcome.kind === 'store_unavailable' ? 100 : (outcome.retryAfterMs ?? 100);
        await sleep(Math.min(pause, 400) + Math.floor(rand() * 50));
      }
    }
  };
  const acmeTools = ['api.lookup', 'api.batch', 'llm.summarize'];
  await Promise.all([
    loop('acme', () => acmeTools[Math.floor(rand() * acmeTools.length)] as string),
    loop('acme', () => acmeTools[Math.floor(rand() * acmeTools.length)] as string),
    loop('globex', () => 'api.lookup'),
  ]);
  line('DONE -');
  log.close();
  await redis.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  line(`CRASH - ${oneLine(error)}`);
  process.exit(1);
});
