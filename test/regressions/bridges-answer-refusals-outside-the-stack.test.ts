// Regression (issue 31, item 27): LangChain's human review answered a rejected call
// (`approval_denied`) and a bad edit (`schema`) itself, and the MCP server answered a malformed
// `_meta` idempotency key or approval token (`schema`) before dispatch: logging, tracing and audit
// layers never saw those calls. Each now goes through the stack, with the same outcome kind.

import { Command, MemorySaver } from '@langchain/langgraph';
import { AIMessage, createAgent, fakeModel, type HITLResponse, ToolMessage } from 'langchain';
import { describe, expect, it } from 'vitest';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  isDispatchError,
  type Middleware,
} from '../../index.js';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import {
  approvalMetaKey,
  createMcpServerFactory,
  idempotencyKeyMetaKey,
} from '../../integrations/mcp/index.js';
import { eras, inMemoryClients } from '../helpers/mcp-clients.js';
import { refundRegistry } from '../helpers/refunds.js';

/** Gated refunds (over 100) behind an audit layer outside the whole stack. */
function setup() {
  const refunds: number[] = [];
  const audited: string[] = [];
  const registry = refundRegistry(refunds);
  const gate = approvalGate({ registry });
  const audit: Middleware = async (ctx, next) => {
    await next();
    const { outcome } = ctx;
    audited.push(`${ctx.callId}:${outcome === undefined ? '?' : outcome.ok ? 'ok' : outcome.kind}`);
  };
  const dispatcher = createDispatcher([audit, ...defaultStack({ registry, approval: gate })]);
  return { registry, gate, dispatcher, refunds, audited };
}

const thread = { configurable: { thread_id: 't-27' } };
const input = { messages: [{ role: 'user' as const, content: 'refund the orders' }] };
// The answer's text before the hint the envelope adds for the model.
const withoutHint = (text: unknown) => String(text).split(' Hint: ')[0];
const resume = (decisions: HITLResponse['decisions']) => new Command({ resume: { decisions } });

describe("a bridge's own refusal goes through the stack", () => {
  it('langchain: the audit layer sees a rejected call and two bad edits, answered as before', async () => {
    const s = setup();
    const model = fakeModel()
      .respondWithTools([
        { id: 'c1', name: 'payments__refund', args: { amount: 500 } },
        { id: 'c2', name: 'payments__refund', args: { amount: 600 } },
        { id: 'c3', name: 'payments__refund', args: { amount: 700 } },
      ])
      .respond(new AIMessage('done'));
    const agent = createAgent({
      model,
      checkpointer: new MemorySaver(),
      middleware: [
        dispatcherMiddleware({ registry: s.registry, dispatcher: s.dispatcher, approvals: s.gate }),
      ],
    });
    await agent.invoke(input, thread);

    const done = await agent.invoke(
      resume([
        { type: 'reject', message: 'over the monthly limit' },
        { type: 'edit', editedAction: { name: 'orders__read', args: {} } },
        { type: 'edit' } as unknown as HITLResponse['decisions'][number],
      ]),
      thread,
    );

    expect(s.refunds).toEqual([]);
    const answers = done.messages.filter((message) => ToolMessage.isInstance(message));
    expect(answers.map((message) => [message.tool_call_id, withoutHint(message.content)])).toEqual([
      [
        'c1',
        'error (approval_denied): "payments__refund" was denied: over the monthly limit; it has not run',
      ],
      [
        'c2',
        `error (schema): The reviewer's edit of "payments__refund" names another tool; an edit may change the args only`,
      ],
      ['c3', `error (schema): The reviewer's edit of "payments__refund" has no args`],
    ]);
    expect(answers.map((message) => isDispatchError(message.artifact) && message.artifact.kind)).toEqual([
      'approval_denied',
      'schema',
      'schema',
    ]);
    expect([...s.audited].sort()).toEqual(['c1:approval_denied', 'c2:schema', 'c3:schema']);
  });

  it('mcp: the audit layer sees a call with a malformed idempotency key or approval token', async () => {
    const s = setup();
    const client = await clientOf(
      createMcpServerFactory({ registry: s.registry, dispatcher: s.dispatcher, info }),
      eras[0][1],
    );
    const call = (meta: Record<string, unknown>) =>
      client.callTool({ name: 'payments.refund', arguments: { amount: 5 }, _meta: meta });

    const badKey = await call({ [idempotencyKeyMetaKey]: 42 });
    const badToken = await call({ [approvalMetaKey]: '' });

    expect(s.refunds).toEqual([]);
    const texts = [badKey, badToken].map((result) => [
      result.isError,
      withoutHint((result.content as { text: string }[])[0]?.text),
    ]);
    expect(texts).toEqual([
      [true, `error (schema): _meta["${idempotencyKeyMetaKey}"] must be a non-empty string, got 42`],
      [true, `error (schema): _meta["${approvalMetaKey}"] must be the approval token, a string`],
    ]);
    expect(s.audited.map((entry) => entry.replace(/^mcp-\d+:/, ''))).toEqual(['schema', 'schema']);
  });

  it('a host denial never runs the call, even in a stack without the approval gate', async () => {
    const refunds: number[] = [];
    const dispatcher = createDispatcher(defaultStack({ registry: refundRegistry(refunds) }));
    const outcome = await dispatcher.dispatch(
      'payments.refund',
      { amount: 5 },
      { approval: { deniedBy: 'ana', reason: 'not this month' } },
    );
    expect(refunds).toEqual([]);
    expect(!outcome.ok && [outcome.kind, outcome.message]).toEqual([
      'approval_denied',
      '"payments.refund" was denied: not this month; it has not run',
    ]);
  });
});

const info = { name: 'refunds', version: '1.0.0' };
const { clientOf } = inMemoryClients();
