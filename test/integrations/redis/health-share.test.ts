// redisHealthShare on a redis-server of its own: two workers' tool-health aggregators publish to
// one hash, and a console on either shows both workers' tools. Also: Redis receipts keep an
// in-doubt call's preview, so the console's in-doubt pane works on a fleet's receipts.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, OutcomeUnknownError, ToolRegistry } from '../../../index.js';
import { toolHealth } from '../../../integrations/console/health.js';
import { inDoubtDesk } from '../../../integrations/console/in-doubt.js';
import { redisHealthShare, redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { secretCores, secrets } from '../../helpers/secrets.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import { until } from '../../stores/contract.js';

const enabled = redisSuitesEnabled('redis health share');

describe.runIf(enabled)('redisHealthShare on a real server', () => {
  const redis = redisSuite();

  function worker(name: string) {
    const registry = new ToolRegistry().register({
      name,
      description: `${name}'s tool`,
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    return createDispatcher(defaultStack({ registry }));
  }

  it("shows worker A's tools in a console on worker B, and counts both processes", async () => {
    const prefix = `h-${randomUUID()}`;
    const a = worker('search');
    const b = worker('charge');
    const healthA = toolHealth({
      dispatcher: a,
      processId: 'worker-a',
      reportEveryMs: 50,
      share: redisHealthShare((await redis.node()).store, { prefix }),
    });
    const healthB = toolHealth({
      dispatcher: b,
      processId: 'worker-b',
      reportEveryMs: 50,
      share: redisHealthShare((await redis.io()).store, { prefix }),
    });
    try {
      for (let i = 0; i < 3; i++) await a.dispatch('search', {});
      await b.dispatch('charge', {});
      await until(async () => {
        const report = await healthB.report();
        return report.processes === 2 && report.tools.some((row) => row.tool === 'search' && row.calls === 3);
      });
      const report = await healthB.report();
      expect(report.tools.map((row) => [row.tool, row.calls])).toEqual([
        ['charge', 1],
        ['search', 3],
      ]);
    } finally {
      healthA.close();
      healthB.close();
    }
  });

  it('forgets a process that stopped publishing once its snapshot expires', async () => {
    const { store } = await redis.node();
    const share = redisHealthShare(store, { prefix: `h-${randomUUID()}` });
    await share.publish('gone', { processId: 'gone', at: 1, windowMs: 60_000, tools: [] }, 50);
    await share.publish('here', { processId: 'here', at: 1, windowMs: 60_000, tools: [] }, 60_000);
    expect(await share.readAll()).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await share.readAll()).toEqual([{ processId: 'here', at: 1, windowMs: 60_000, tools: [] }]);
  });

  it('rejects bad options naming them', async () => {
    const { store } = await redis.node();
    expect(() => redisHealthShare({} as never)).toThrow(/redis/);
    expect(() => redisHealthShare(store, { prefix: '' })).toThrow(/prefix/);
    expect(() => redisHealthShare(store, { prefx: 'x' } as never)).toThrow(/prefix/);
  });

  it("keeps an in-doubt call's redacted preview in Redis receipts, for the console's reconcile", async () => {
    const { store: client } = await redis.node();
    const store = redisIdempotencyStore(client, { prefix: `r-${randomUUID()}` });
    const asked: unknown[] = [];
    let verdict: 'unknown' | 'committed' = 'unknown';
    const registry = new ToolRegistry().register({
      name: 'refund',
      description: 'refunds',
      inputSchema: z.object({ order: z.string(), apiKey: z.string() }),
      handler: () => {
        throw new OutcomeUnknownError('no answer');
      },
      reconcile: (args) => {
        asked.push(args);
        return verdict;
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { store } }));
    await dispatcher.dispatch('refund', { order: 'o-1', apiKey: secrets.api_key }, { idempotencyKey: 'o-1' });
    const desk = inDoubtDesk({ receipts: store.receipts, registry });
    const [item] = await desk.list();
    expect(item).toMatchObject({ key: 'o-1', tool: 'refund', canReconcile: true });
    expect(item?.preview).toContain('"order":"o-1"');
    for (const core of secretCores) expect(JSON.stringify(item)).not.toContain(core);
    verdict = 'committed';
    await expect(desk.reconcile('o-1', { by: 'ana' })).resolves.toMatchObject({ status: 'succeeded' });
    expect(asked.at(-1)).toMatchObject({ order: 'o-1' });
    expect(await store.receipts.get('o-1')).toMatchObject({ status: 'succeeded', settledBy: 'reconcile' });
  });
});
