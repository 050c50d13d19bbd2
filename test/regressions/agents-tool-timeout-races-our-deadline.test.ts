// Regression (issue 33 item 3): on @openai/agents 0.20, a `timeoutMs` set on a tool from
// toAgentsTools armed the SDK's own timer, which raced our deadline: at the host's timeout the
// SDK answered the model "Tool 'x' timed out after 40ms." and aborted the call's signal, so our
// attempt ended as `cancelled` (or ran on unseen) instead of as our `timeout`. One timer now owns
// the call: ours, capped by the host's.

import { invokeFunctionTool, RunContext } from '@openai/agents';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, type Outcome, ToolRegistry } from '../../index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a host timeout on a tool from toAgentsTools', () => {
  it('ends the call as our timeout, in our words, with no SDK timer racing it', async () => {
    const registry = new ToolRegistry().register({
      name: 'reports.render',
      inputSchema: z.object({}),
      timeoutMs: 600_000,
      handler: (_args, ctx) =>
        new Promise<never>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
        ),
    });
    const outcomes: Outcome[] = [];
    const [render] = toAgentsTools({
      registry,
      dispatcher: createDispatcher(defaultStack({ registry })),
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    if (render === undefined) throw new Error('no tool');
    render.timeoutMs = 40;
    // What the Runner calls for each function call: it reads `timeoutMs` off the tool.
    const answer = invokeFunctionTool({
      tool: render,
      runContext: new RunContext({}),
      input: '{}',
      details: {
        toolCall: { type: 'function_call', callId: 'c1', name: 'reports__render', arguments: '{}' },
      },
    });
    await vi.advanceTimersByTimeAsync(40);
    expect(await answer).toMatch(
      /^error \(timeout, after 1 attempt\): "reports__render" timed out after 40 ms/,
    );
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'timeout' })]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
