// Regression: a result with one throwing getter was rendered as "[object Object]", losing every
// other field, in toJsonSafe, toToolMessage and so in every toolkit's tool message.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, toToolMessage } from '../../index.js';
import { toJsonSafe } from '../../middleware/index.js';
import { createOpenAIToolkit } from '../../integrations/openai/index.js';

const withBadGetter = () => ({
  id: 7,
  tags: ['a', 'b'],
  get secret(): never {
    throw new Error('vault sealed');
  },
});

describe('a result with a throwing getter', () => {
  it('keeps the other fields and marks the unreadable one', async () => {
    expect(toJsonSafe(withBadGetter())).toEqual({
      id: 7,
      tags: ['a', 'b'],
      secret: '[Unreadable: vault sealed]',
    });
    expect(toToolMessage({ ok: true, result: withBadGetter(), attempts: 1 })).toBe(
      '{"id":7,"tags":["a","b"],"secret":"[Unreadable: vault sealed]"}',
    );
    const registry = new ToolRegistry().register({
      name: 'vault.read',
      inputSchema: z.object({}),
      handler: withBadGetter,
    });
    const kit = createOpenAIToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) });
    const { messages, outcomes } = await kit.runChatToolCalls({
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'vault__read', arguments: '{}' } }],
    });
    expect(outcomes[0]!.ok).toBe(true);
    expect(messages[0]!.content).toBe('{"id":7,"tags":["a","b"],"secret":"[Unreadable: vault sealed]"}');
  });
});
