// Regression: a tool from toAiSdkTools destructured its second argument, so `execute(input)`
// without the SDK's options threw "Cannot destructure property 'toolCallId' of undefined".

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type ToolContext } from '../../index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';

describe('toAiSdkTools execute without options', () => {
  it('dispatches under a generated call id with no key and no signal of its own', async () => {
    const seen: ToolContext[] = [];
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ query: z.string() }),
      handler: ({ query }, ctx) => {
        seen.push(ctx);
        return `hits for ${query}`;
      },
    });
    const tools = toAiSdkTools({
      registry,
      dispatcher: createDispatcher(defaultStack({ registry })),
      idempotencyScope: 'run-1',
    });
    const execute = tools['search__web']!.execute!;
    await expect(execute({ query: 'x' }, undefined as never)).resolves.toBe('hits for x');
    expect(seen[0]!.callId).toMatch(/^ai-sdk-/);
    expect(seen[0]!.idempotencyKey).toBeUndefined();
  });
});
