// MRTR through the proxy (2026-07-28): an upstream tool's `input_required` answer passes through
// to the caller and is never stored under the key; the caller's retry (new id, same key,
// `inputResponses`, `requestState`) reaches the upstream and runs; only the terminal result is
// recorded, so the key then replays it without asking again.
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { acceptedContent, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createMcpProxy, idempotencyKeyMetaKey, receiptMetaKey } from '../../../integrations/mcp/index.js';
import { listenMcp } from '../../../integrations/mcp/listener.js';
import { gate } from '../../helpers/gate.js';

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
});

const confirmation = z.object({ confirm: z.boolean() });

interface Seen {
  rounds: number;
  deployed: number;
  states: unknown[];
  /** Holds each asking round until it resolves. */
  hold?: Promise<void>;
}

// A v2 upstream on Streamable HTTP whose `deploy` asks for a confirmation first.
async function upstream(seen: Seen): Promise<string> {
  const listener = await listenMcp(
    () => {
      const server = new McpServer({ name: 'deployer', version: '1.0.0' });
      server.registerTool('deploy', { inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
        seen.rounds += 1;
        const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
        seen.states.push(ctx.mcpReq.requestState());
        if (confirmed?.confirm !== true) {
          await seen.hold;
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmation }),
            },
            requestState: `asked-${env}`,
          });
        }
        seen.deployed += 1;
        return { content: [{ type: 'text', text: `deployed to ${env}` }] };
      });
      return server;
    },
    { url: 'http://127.0.0.1:0/mcp' },
  );
  closing.push(() => listener.close());
  return listener.url;
}

async function modernClient(url: string, asked: string[], log?: string[]): Promise<Client> {
  const proxy = await createMcpProxy({
    upstream: { url },
    ...(log === undefined
      ? { logLevel: 'silent' as const }
      : { logLevel: 'debug' as const, log: (line) => log.push(line) }),
  });
  closing.push(() => proxy.close());
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const served = serveStdio(proxy.serverFactory, { transport: serverSide });
  const client = new Client(
    { name: 'host', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(clientSide);
  closing.push(
    () => client.close(),
    () => served.close(),
  );
  return client;
}

describe('input_required through the proxy', () => {
  it('reaches the caller, whose retry runs the tool once; the key then replays only the result', async () => {
    const seen: Seen = { rounds: 0, deployed: 0, states: [] };
    const asked: string[] = [];
    const client = await modernClient(await upstream(seen), asked);
    const params = {
      name: 'deploy',
      arguments: { env: 'prod' },
      _meta: { [idempotencyKeyMetaKey]: 'deploy-1' },
    };

    const first = await client.callTool(params);
    expect(first.content).toEqual([{ type: 'text', text: 'deployed to prod' }]);
    expect(first._meta?.[receiptMetaKey]).toEqual({ key: 'deploy-1', replayed: false });
    expect(asked).toEqual(['Deploy to prod?']);
    // The asking round and the retry, which carried the answer and the state back.
    expect(seen).toEqual({ rounds: 2, deployed: 1, states: [undefined, 'asked-prod'] });

    const again = await client.callTool(params);
    expect(again.content).toEqual(first.content);
    expect(again._meta?.[receiptMetaKey]).toEqual({ key: 'deploy-1', replayed: true });
    expect(asked).toHaveLength(1);
    expect(seen.rounds).toBe(2);
  }, 30_000);

  it('hands the input_required result itself to a caller in manual mode, storing nothing', async () => {
    const seen: Seen = { rounds: 0, deployed: 0, states: [] };
    const client = await modernClient(await upstream(seen), []);
    const params = {
      name: 'deploy',
      arguments: { env: 'dev' },
      _meta: { [idempotencyKeyMetaKey]: 'deploy-2' },
    };

    const asking = (await client.callTool(params, { allowInputRequired: true })) as Record<string, unknown>;
    expect(asking).toMatchObject({ resultType: 'input_required', requestState: 'asked-dev' });
    expect(Object.keys(asking['inputRequests'] as object)).toEqual(['confirm']);
    // Asked again, not replayed: nothing was stored under the key.
    const still = (await client.callTool(params, { allowInputRequired: true })) as Record<string, unknown>;
    expect(still['resultType']).toBe('input_required');

    const done = await client.callTool(
      {
        ...params,
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
        requestState: 'asked-dev',
      } as typeof params,
      { allowInputRequired: true },
    );
    expect(done.content).toEqual([{ type: 'text', text: 'deployed to dev' }]);
    expect(seen).toMatchObject({ rounds: 3, deployed: 1 });
  }, 30_000);

  it('hands the round to a caller that joined the same key while it ran, and stores nothing', async () => {
    const held = gate();
    const seen: Seen = { rounds: 0, deployed: 0, states: [], hold: held.promise };
    const log: string[] = [];
    const client = await modernClient(await upstream(seen), [], log);
    const params = {
      name: 'deploy',
      arguments: { env: 'qa' },
      _meta: { [idempotencyKeyMetaKey]: 'deploy-3' },
    };

    const first = client.callTool(params, { allowInputRequired: true });
    await vi.waitFor(() => expect(seen.rounds).toBe(1));
    const joined = client.callTool(params, { allowInputRequired: true });
    await vi.waitFor(() =>
      expect(log.some((line) => /idempotency\.hit .*source=in_flight/.test(line))).toBe(true),
    );
    held.open();
    for (const answer of (await Promise.all([first, joined])) as Record<string, unknown>[]) {
      expect(answer).toMatchObject({ resultType: 'input_required', requestState: 'asked-qa' });
    }
    expect(seen.rounds).toBe(1);
    // Nothing stored: the key asks again.
    const again = (await client.callTool(params, { allowInputRequired: true })) as Record<string, unknown>;
    expect(again['resultType']).toBe('input_required');
    expect(seen.rounds).toBe(2);
  }, 30_000);
});
