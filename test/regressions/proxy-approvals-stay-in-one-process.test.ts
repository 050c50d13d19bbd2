// `mcp-proxy --redis-url --require-approval` kept its paused requests in a memory store of each
// process, so a request paused on one proxy could be answered (and listed by `--console`) only on
// that one. The fleet's stores now include the approvals, on the same Redis and prefix.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { connectFleet } from '../../integrations/mcp/fleet.js';
import { redisApprovalStore } from '../../integrations/redis/index.js';
import { redisSuitesEnabled, type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import { connectNodeRedis } from '../integrations/redis/clients.js';

describe.runIf(redisSuitesEnabled('mcp-proxy fleet approvals'))('the proxy fleet stores', () => {
  let server: RedisServer | undefined;
  afterAll(async () => server?.stop());

  it('keep the approvals on Redis, where another process lists and answers them', async () => {
    server = await startRedisServer();
    const prefix = `fleet-${randomUUID().slice(0, 8)}`;
    const fleet = await connectFleet(server.url, prefix);
    const other = await connectNodeRedis(server.url);
    try {
      const approvals = fleet.stores.approvals;
      const { created } = await approvals.open({
        token: 'tok-fleet-1',
        callKey: 'call-1',
        tool: 'ucharge_once',
        fingerprint: 'fp',
        key: null,
        callId: 'c1',
        reason: 'destructive',
        ttlMs: 60_000,
      });
      expect(created).toBe(true);
      const elsewhere = redisApprovalStore(other.store, { prefix });
      const page = await elsewhere.list?.();
      expect(page?.items.map((item) => item.token)).toEqual(['tok-fleet-1']);
      expect(await elsewhere.answer('tok-fleet-1', { action: 'approve', by: 'ana' })).toBe(true);
      expect((await approvals.get('tok-fleet-1'))?.status).toBe('approved');
    } finally {
      await other.close();
      await fleet.close();
    }
  }, 20_000);
});
