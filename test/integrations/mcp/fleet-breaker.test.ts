// `mcp-proxy --redis-url` shares the breakers' state: a circuit that calls through one proxy
// opened turns calls away on the other proxy of the fleet (one on node-redis, one on ioredis),
// which then never reaches the upstream. Both run on a redis-server of the test's own.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../../index.js';
import { errorMetaKey } from '../../../integrations/mcp/index.js';
import { mcpFleet } from '../../helpers/mcp-fleet.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';

async function call(url: string): Promise<Record<string, unknown> | undefined> {
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = await client.callTool({ name: 'stall', arguments: {} });
    return result._meta?.[errorMetaKey] as Record<string, unknown> | undefined;
  } finally {
    await client.close();
  }
}

const enabled = redisSuitesEnabled('mcp-proxy --redis-url circuit sharing');

describe.runIf(enabled)('two mcp-proxy processes on one Redis share their circuits', () => {
  let runs = 0;
  // A tool that never answers by itself: each call through a proxy ends by the proxy's timeout.
  const registry = new ToolRegistry().register({
    name: 'stall',
    inputSchema: z.object({}),
    handler: (_args, ctx) =>
      new Promise((_resolve, reject) => {
        runs += 1;
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      }),
  });
  const fleet = mcpFleet({
    registry,
    info: { name: 'stalling', version: '1.0.0' },
    config: {
      tools: { stall: { timeoutMs: 200, maxAttempts: 1 } },
      breaker: { failureThreshold: 2, cooldownMs: 600_000 },
    },
  });

  it('refuses calls on the other proxy once one opened the circuit, without reaching the upstream', async () => {
    const [first, second] = [fleet.nodeRedis, fleet.ioredis];
    // Before: the other proxy calls through (its own timeout is a first failure on the circuit).
    expect(await call(second.url)).toMatchObject({ kind: 'timeout' });
    expect(await call(first.url)).toMatchObject({ kind: 'timeout' });
    expect(runs).toBe(2);
    expect(await call(second.url)).toMatchObject({ kind: 'circuit_open' });
    expect(await call(first.url)).toMatchObject({ kind: 'circuit_open' });
    expect(runs).toBe(2);
  }, 60_000);
});
