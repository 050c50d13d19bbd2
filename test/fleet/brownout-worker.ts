// One brownout fleet worker: a default stack with an autopilot on `redisAutopilotStore`, running
// a fixed number of calls of a tool that fails transiently 30 % of the time, then logging one
// line of counts: `SUM <calls> <attempts> <failed first attempts> <retries> <budget refusals>
// <fallbacks> <successes> <worker> <time ms>` (or `CRASH <error> <worker> <time ms>`).

import { z } from 'zod';
import { autopilot, createDispatcher, defaultStack, ToolRegistry, TransientError } from '../../index.js';
import { redisAutopilotStore } from '../../integrations/redis/index.js';
import {
  connectOnceUp,
  type FleetWorkerConfig,
  oneLine,
  seededRandom,
  sleep,
  stampedLines,
  workerConfig,
  workerLog,
} from './worker-kit.js';

/** What the runner tells a brownout worker (JSON in TD_FLEET_CONFIG). */
export interface BrownoutWorkerConfig extends FleetWorkerConfig {
  /** Logical calls this worker makes. */
  calls: number;
  /** Calls in flight at once. */
  concurrency: number;
  /** The share of attempts that fail transiently. */
  failShare: number;
}

const config = workerConfig<BrownoutWorkerConfig>('TD_FLEET_CONFIG');
const log = workerLog(config.logPath);
const line = stampedLines(log, config.id);

async function main(): Promise<void> {
  const redis = await connectOnceUp(config.client, config.url, { subscriber: false });
  const rand = seededRandom(config.seed);
  let attempts = 0;
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({}),
    idempotent: true,
    handler: async () => {
      attempts++;
      await sleep(2 + rand() * 6);
      if (rand() < config.failShare) throw new TransientError('backend browning out');
      return 'hits';
    },
  });
  const counts = { failedFirst: 0, retries: 0, refused: 0, fallbacks: 0, ok: 0 };
  const pilot = autopilot({ store: redisAutopilotStore({ client: redis.store, prefix: config.prefix }) });
  const dispatcher = createDispatcher(
    defaultStack({ registry, autopilot: pilot, retry: { baseDelayMs: 5, random: rand } }),
    {
      onEvent: (event) => {
        if (event.type === 'dispatch.retry') counts.retries++;
        else if (event.type === 'retry.budget_exhausted') counts.refused++;
        else if (event.type === 'autopilot.fallback') counts.fallbacks++;
        else if (event.type === 'dispatch.attempt_failed' && event.attempt === 1) counts.failedFirst++;
      },
    },
  );
  let next = 0;
  const lane = async () => {
    while (next < config.calls) {
      next++;
      const outcome = await dispatcher.dispatch('search.web', {});
      if (outcome.ok) counts.ok++;
    }
  };
  await Promise.all(Array.from({ length: config.concurrency }, lane));
  const { failedFirst, retries, refused, fallbacks, ok } = counts;
  line(`SUM ${config.calls} ${attempts} ${failedFirst} ${retries} ${refused} ${fallbacks} ${ok}`);
  await redis.close();
}

main().then(
  () => {
    log.close();
    process.exit(0);
  },
  (error: unknown) => {
    line(`CRASH ${oneLine(error)}`);
    log.close();
    process.exit(1);
  },
);
