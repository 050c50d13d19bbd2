// dispatcherMiddleware and toLangChainTools and the rules every host keeps: only offered tools run,
// missing host values never fail a call, and every result is answered, rendered field by field or
// as `internal`.

import { AIMessage, createAgent, fakeModel, ToolMessage, type BaseMessage } from 'langchain';
import { describe, expect, it } from 'vitest';
import { dispatcherMiddleware, toLangChainTools } from '../../../integrations/langchain/index.js';
import { isDispatchError } from '../../../index.js';
import { oddResultsFixture } from '../openai/odd-results.js';

const input = { messages: [{ role: 'user' as const, content: 'go' }] };
const answers = (messages: BaseMessage[]) =>
  messages.filter((message): message is ToolMessage => ToolMessage.isInstance(message));
const calls = (...names: string[]) =>
  fakeModel()
    .respondWithTools(names.map((name, i) => ({ id: `c${i + 1}`, name, args: {} })))
    .respond(new AIMessage('done'));

describe('LangChain: host rules', () => {
  it('runs only the tools it offered, with names: false too', async () => {
    const f = oddResultsFixture();
    const middleware = dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher, names: false });
    f.registerLater();
    const agent = createAgent({ model: calls('admin_wipe', 'plain.get'), middleware: [middleware] });
    const result = await agent.invoke(input);
    expect(answers(result.messages).map((m) => [m.status, m.content])).toEqual([
      ['error', 'error (not_found): No tool named "admin_wipe" Hint: Use one of the listed tools.'],
      ['success', '{"plain":true}'],
    ]);
    expect(f.ran).toEqual(['plain.get']);
  });

  it('leaves a later tool and a dotted registry name to LangChain as plain tools, which never runs them', async () => {
    const f = oddResultsFixture();
    const tools = toLangChainTools({ registry: f.registry, dispatcher: f.dispatcher });
    f.registerLater();
    const agent = createAgent({ model: calls('admin_wipe', 'plain.get', 'plain__get'), tools });
    const result = await agent.invoke(input);
    expect(answers(result.messages).map((m) => m.status)).toEqual(['error', 'error', 'success']);
    expect(String(answers(result.messages)[0]!.content)).toContain('admin_wipe is not a valid tool');
    expect(f.ran).toEqual(['plain.get']);
    expect(f.events.filter((event) => event.type === 'dispatch.attempt').map((event) => event.tool)).toEqual([
      'plain.get',
    ]);
  });

  it('answers calls without a config, a runtime, an id or a signal', async () => {
    const f = oddResultsFixture();
    const plain = toLangChainTools({ registry: f.registry, dispatcher: f.dispatcher })[0]!;
    const direct = (await plain.invoke({})) as ToolMessage;
    expect([direct.content, direct.tool_call_id]).toEqual([
      '{"plain":true}',
      expect.stringMatching(/^langchain-/),
    ]);
    const middleware = dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher });
    const answered = (await middleware.wrapToolCall!(
      { toolCall: { name: 'plain__get', args: {} }, tool: undefined, state: { messages: [] } } as never,
      () => {
        throw new Error('the handler is never called for our tools');
      },
    )) as ToolMessage;
    expect([answered.content, answered.status]).toEqual(['{"plain":true}', 'success']);
  });

  it('renders a throwing field as a marker, cuts a 50 000-level result, and fails an unreadable one as internal', async () => {
    const f = oddResultsFixture();
    const agent = createAgent({
      model: calls('getter__get', 'deep__get', 'hidden__get'),
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });
    const result = await agent.invoke(input);
    const [getter, deep, hidden] = answers(result.messages);
    expect([getter!.status, getter!.content]).toEqual(['success', f.getterText]);
    expect([deep!.status, deep!.content]).toEqual(['success', expect.stringMatching(f.deepText)]);
    expect([hidden!.status, hidden!.content]).toEqual([
      'error',
      expect.stringMatching(f.hiddenText('hidden__get')),
    ]);
    expect(isDispatchError(hidden!.artifact) && hidden!.artifact.kind).toBe('internal');
    // The artifacts survive JSON.stringify, as a checkpointer needs.
    expect(() => JSON.stringify([getter!.artifact, deep!.artifact, hidden!.artifact])).not.toThrow();
  });
});
