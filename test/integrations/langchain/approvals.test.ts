// dispatcherMiddleware({ approvals }) driven by the real LangChain agent: createAgent with a
// MemorySaver checkpointer and fakeModel(), interrupted and resumed as humanInTheLoopMiddleware is.

import { Command, MemorySaver } from '@langchain/langgraph';
import {
  AIMessage,
  createAgent,
  fakeModel,
  ToolMessage,
  type BaseMessage,
  type HITLRequest,
  type HITLResponse,
  type Interrupt,
} from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  isDispatchError,
  type DispatchEvent,
} from '../../../index.js';
import { dispatcherMiddleware, toLangChainTools } from '../../../integrations/langchain/index.js';
import { refundRegistry } from '../../helpers/refunds.js';

function setup(options: { mode?: 'enforce' | 'shadow' } = {}) {
  const refunds: number[] = [];
  const registry = refundRegistry(refunds).register({
    name: 'orders.read',
    inputSchema: z.object({}),
    annotations: { readOnlyHint: true },
    handler: () => 'delivered',
  });
  const events: DispatchEvent[] = [];
  const gate = approvalGate({ registry, ...options });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }), {
    onEvent: (event) => events.push(event),
  });
  return { registry, dispatcher, gate, refunds, events };
}

type Setup = ReturnType<typeof setup>;
type Calls = { id: string; name: string; args: Record<string, unknown> }[];

function agentOf(s: Setup, calls: Calls) {
  const model = fakeModel().respondWithTools(calls).respond(new AIMessage('done'));
  return createAgent({
    model,
    checkpointer: new MemorySaver(),
    middleware: [
      dispatcherMiddleware({
        registry: s.registry,
        dispatcher: s.dispatcher,
        approvals: s.gate,
        idempotencyScope: (runtime) => runtime.configurable?.['thread_id'] as string | undefined,
      }),
    ],
  });
}

const thread = { configurable: { thread_id: 't-1' } };
const input = { messages: [{ role: 'user' as const, content: 'refund the order' }] };
const toolMessages = (messages: BaseMessage[]) =>
  messages.filter((message): message is ToolMessage => ToolMessage.isInstance(message));
const summary = (messages: BaseMessage[]) =>
  toolMessages(messages).map((message) => [message.tool_call_id, message.status, message.content]);
const interruptOf = (result: unknown) =>
  (result as { __interrupt__?: Interrupt<HITLRequest>[] }).__interrupt__?.[0]?.value;
const resume = (decisions: HITLResponse['decisions']) => new Command({ resume: { decisions } });

describe('dispatcherMiddleware with approvals', () => {
  it('interrupts for the gated calls only, shaped as humanInTheLoopMiddleware, and runs nothing', async () => {
    const s = setup();
    const agent = agentOf(s, [
      { id: 'c1', name: 'orders__read', args: {} },
      { id: 'c2', name: 'payments__refund', args: { amount: 500 } },
      { id: 'c3', name: 'payments__refund', args: { amount: 5 } },
      { id: 'c4', name: 'payments__refund', args: { amount: 700 } },
    ]);

    const paused = await agent.invoke(input, thread);

    const request = interruptOf(paused);
    expect(request?.actionRequests.map(({ name, args }) => [name, args])).toEqual([
      ['payments__refund', { amount: 500 }],
      ['payments__refund', { amount: 700 }],
    ]);
    expect(request?.actionRequests[0]?.description).toMatch(
      /^Tool execution requires approval \(the tool needs approval for these args\)\n\nTool: payments__refund\nArgs: /,
    );
    expect(request?.reviewConfigs).toEqual([
      { actionName: 'payments__refund', allowedDecisions: ['approve', 'edit', 'reject'] },
      { actionName: 'payments__refund', allowedDecisions: ['approve', 'edit', 'reject'] },
    ]);
    expect(s.refunds).toEqual([]);
    expect(toolMessages(paused.messages)).toEqual([]);
  });

  it('runs an approved call once as approved by the host, under its key', async () => {
    const s = setup();
    const agent = agentOf(s, [{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }]);
    await agent.invoke(input, thread);

    const done = await agent.invoke(resume([{ type: 'approve' }]), thread);

    expect(s.refunds).toEqual([500]);
    expect(summary(done.messages)).toEqual([['c1', 'success', 'refunded 500']]);
    expect(done.messages.at(-1)?.content).toBe('done');
    const decisions = s.events.filter((event) => event.type === 'approval.decision');
    expect(decisions).toMatchObject([
      {
        callId: 'c1',
        action: 'allow',
        source: 'host',
        reason: 'approved by langchain',
        enforced: true,
      },
    ]);
    expect(decisions).toHaveLength(1);
    expect(s.events.some((event) => event.type === 'approval.required')).toBe(false);
  });

  it('names the approver a decision carries', async () => {
    const s = setup();
    const agent = agentOf(s, [{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }]);
    await agent.invoke(input, thread);

    await agent.invoke(
      resume([{ type: 'approve', approvedBy: 'ana' } as HITLResponse['decisions'][number]]),
      thread,
    );

    const decision = s.events.find((event) => event.type === 'approval.decision');
    expect(decision).toMatchObject({ source: 'host', reason: 'approved by ana' });
  });

  it('runs an edited call with the edited args, validated again', async () => {
    const s = setup();
    const agent = agentOf(s, [{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }]);
    await agent.invoke(input, thread);

    const done = await agent.invoke(
      resume([{ type: 'edit', editedAction: { name: 'payments__refund', args: { amount: 250 } } }]),
      thread,
    );

    expect(s.refunds).toEqual([250]);
    expect(summary(done.messages)).toEqual([['c1', 'success', 'refunded 250']]);
    // The history the model reads next shows the call as it ran.
    const asked = done.messages.find(
      (message) => AIMessage.isInstance(message) && message.tool_calls?.length,
    );
    expect((asked as AIMessage).tool_calls?.[0]?.args).toEqual({ amount: 250 });
  });

  it('answers an edit with bad args, or naming another tool, as schema, running nothing', async () => {
    const s = setup();
    const agent = agentOf(s, [
      { id: 'c1', name: 'payments__refund', args: { amount: 500 } },
      { id: 'c2', name: 'payments__refund', args: { amount: 600 } },
    ]);
    await agent.invoke(input, thread);

    const done = await agent.invoke(
      resume([
        { type: 'edit', editedAction: { name: 'payments__refund', args: { amount: 'all of it' } } },
        { type: 'edit', editedAction: { name: 'orders__read', args: {} } },
      ]),
      thread,
    );

    expect(s.refunds).toEqual([]);
    const sent = summary(done.messages);
    expect(sent.map(([id, status]) => [id, status])).toEqual([
      ['c1', 'error'],
      ['c2', 'error'],
    ]);
    expect(sent[0]?.[2]).toMatch(/^error \(schema\): Invalid args for "payments__refund": amount: /);
    expect(sent[1]?.[2]).toMatch(
      /^error \(schema\): The reviewer's edit of "payments__refund" names another tool/,
    );
    const artifacts = toolMessages(done.messages).map((message) => message.artifact);
    expect(artifacts.map((outcome) => isDispatchError(outcome) && [outcome.kind, outcome.attempts])).toEqual([
      ['schema', 0],
      ['schema', 0],
    ]);
  });

  it("answers a rejected call approval_denied with the reviewer's reason, and runs the approved one", async () => {
    const s = setup();
    const agent = agentOf(s, [
      { id: 'c1', name: 'payments__refund', args: { amount: 500 } },
      { id: 'c2', name: 'payments__refund', args: { amount: 300 } },
    ]);
    await agent.invoke(input, thread);

    const done = await agent.invoke(
      resume([{ type: 'reject', message: 'over the monthly limit' }, { type: 'approve' }]),
      thread,
    );

    expect(s.refunds).toEqual([300]);
    const sent = summary(done.messages);
    expect(sent.map(([id, status]) => [id, status])).toEqual([
      ['c1', 'error'],
      ['c2', 'success'],
    ]);
    expect(sent[0]?.[2]).toMatch(
      /^error \(approval_denied\): "payments__refund" was denied: over the monthly limit; it has not run/,
    );
    expect(sent[1]?.[2]).toBe('refunded 300');
    const denied = toolMessages(done.messages)[0]?.artifact;
    expect(isDispatchError(denied) && denied.kind).toBe('approval_denied');
  });

  it("answers a respond decision with the reviewer's text, running nothing and recording no approval or denial", async () => {
    // LangChain 1.5.18's per-call `respond` decision (the registry serves 1.5.14, whose types lack
    // it): accepted when a resumer sends it, as the tool's answer in its place.
    const s = setup();
    const agent = agentOf(s, [
      { id: 'c1', name: 'payments__refund', args: { amount: 500 } },
      { id: 'c2', name: 'payments__refund', args: { amount: 300 } },
    ]);
    await agent.invoke(input, thread);
    const seenBefore = s.events.length;

    const respond = {
      type: 'respond',
      message: 'already refunded by hand',
    } as unknown as HITLResponse['decisions'][number];
    const done = await agent.invoke(resume([respond, { type: 'approve' }]), thread);

    expect(s.refunds).toEqual([300]);
    expect(summary(done.messages)).toEqual([
      ['c1', 'success', 'already refunded by hand'],
      ['c2', 'success', 'refunded 300'],
    ]);
    expect(toolMessages(done.messages)[0]?.artifact).toBeUndefined();
    const afterResume = s.events.slice(seenBefore);
    expect(afterResume.filter((event) => event.callId.includes('c1'))).toEqual([]);
    expect(afterResume.some((event) => event.callId.includes('c2'))).toBe(true);
  });

  it('keeps a decision to its own turn: a later call with the same id asks again', async () => {
    const s = setup();
    const model = fakeModel()
      .respondWithTools([{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }])
      .respondWithTools([{ id: 'c1', name: 'payments__refund', args: { amount: 900 } }])
      .respond(new AIMessage('done'));
    const agent = createAgent({
      model,
      checkpointer: new MemorySaver(),
      middleware: [
        dispatcherMiddleware({ registry: s.registry, dispatcher: s.dispatcher, approvals: s.gate }),
      ],
    });
    await agent.invoke(input, thread);

    const second = await agent.invoke(resume([{ type: 'approve' }]), thread);

    expect(s.refunds).toEqual([500]);
    expect(interruptOf(second)?.actionRequests.map((action) => action.args)).toEqual([{ amount: 900 }]);
  });

  it('does not interrupt in shadow mode: the call runs and the decision says enforced: false', async () => {
    const s = setup({ mode: 'shadow' });
    const agent = agentOf(s, [{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }]);

    const done = await agent.invoke(input, thread);

    expect(interruptOf(done)).toBeUndefined();
    expect(s.refunds).toEqual([500]);
    const decision = s.events.find((event) => event.type === 'approval.decision');
    expect(decision).toMatchObject({ action: 'require', enforced: false });
  });

  it('throws on a resume whose decisions do not match the action requests', async () => {
    const s = setup();
    const agent = agentOf(s, [{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }]);
    await agent.invoke(input, thread);

    await expect(agent.invoke(resume([]), thread)).rejects.toThrow(/one decision per action request \(1\)/);
    expect(s.refunds).toEqual([]);
  });

  it('throws a TypeError for approvals that are no gate, and for approvals on plain tools', () => {
    const s = setup();
    expect(() =>
      dispatcherMiddleware({ registry: s.registry, dispatcher: s.dispatcher, approvals: {} as never }),
    ).toThrow(new TypeError('dispatcherMiddleware(): approvals must be an approvalGate()'));
    expect(() =>
      toLangChainTools({ registry: s.registry, dispatcher: s.dispatcher, approvals: s.gate }),
    ).toThrow(/toLangChainTools\(\): approvals needs dispatcherMiddleware/);
  });
});
