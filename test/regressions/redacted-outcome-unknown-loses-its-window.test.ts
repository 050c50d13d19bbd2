// Issue 31, item 3: redacting an envelope whose message held a secret made a new one without its
// `window`, so an `outcome_unknown` no longer said where its outcome was lost: not on the outcome,
// in `toJSON`, in the JSON-RPC `data` nor in the MCP `_meta` envelope.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  createRedactor,
  defaultStack,
  OutcomeUnknownError,
  ToolRegistry,
} from '../../index.js';
import { createMcpServerFactory, errorMetaKey } from '../../integrations/mcp/index.js';
import { eras, inMemoryClients } from '../helpers/mcp-clients.js';
import { secrets } from '../helpers/secrets.js';

const { clientOf } = inMemoryClients();

function billing() {
  const registry = new ToolRegistry().register({
    name: 'pay.charge',
    inputSchema: z.object({ cents: z.number() }),
    handler: () => {
      throw new OutcomeUnknownError(`the gateway hung up after POST with ${secrets.bearer}`);
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }), { redact: createRedactor() });
  return { registry, dispatcher, info: { name: 'billing', version: '1.0.0' } };
}

describe('a redacted outcome_unknown', () => {
  it('keeps its window on the outcome, in toJSON and in the JSON-RPC data', async () => {
    const outcome = await billing().dispatcher.dispatch('pay.charge', { cents: 500 });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.message).toContain('Bearer [REDACTED:bearer]');
    expect(outcome.message).not.toContain('abcdef0123456789ghij');
    expect([outcome.kind, outcome.window]).toEqual(['outcome_unknown', 'handler_unknown']);
    expect(outcome.toJSON().window).toBe('handler_unknown');
    expect(outcome.toJsonRpcError().data.window).toBe('handler_unknown');
  });

  it.each(eras)('keeps its window in the MCP _meta envelope (%s)', async (_era, options) => {
    const client = await clientOf(createMcpServerFactory(billing()), options);
    const result = await client.callTool({ name: 'pay.charge', arguments: { cents: 500 } });
    expect(result.isError).toBe(true);
    const envelope = result._meta?.[errorMetaKey] as Record<string, unknown>;
    expect(envelope).toMatchObject({ kind: 'outcome_unknown', window: 'handler_unknown' });
    expect(JSON.stringify(result)).not.toContain('abcdef0123456789ghij');
  });
});
