// Regression: a result that could not be read at all (a proxy that hides its keys, a throwing toJSON) was
// answered as a success whose text was "[object Object]"; it is an `internal` failure that says
// the tool ran but its result cannot be sent.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { createAnthropicToolkit } from '../../integrations/anthropic/index.js';

describe('a result that cannot be rendered', () => {
  it('is answered as an internal failure, flagged is_error, naming the tool', async () => {
    const registry = new ToolRegistry()
      .register({
        name: 'proxy.get',
        inputSchema: z.object({}),
        // Its fields cannot even be listed.
        handler: () =>
          new Proxy(
            { a: 1 },
            {
              ownKeys: () => {
                throw new Error('keys withheld');
              },
            },
          ),
      })
      .register({
        name: 'json.get',
        inputSchema: z.object({}),
        handler: () => ({
          toJSON() {
            throw new Error('no JSON today');
          },
        }),
      });
    const claude = createAnthropicToolkit({
      registry,
      dispatcher: createDispatcher(defaultStack({ registry })),
    });
    const { message, outcomes } = await claude.runToolUses({
      content: [
        { type: 'tool_use', id: 't1', name: 'proxy__get', input: {} },
        { type: 'tool_use', id: 't2', name: 'json__get', input: {} },
      ],
    });
    expect(outcomes.map((o) => (o.ok ? 'ok' : [o.kind, o.attempts]))).toEqual([
      ['internal', 1],
      ['internal', 1],
    ]);
    expect(message.content.map((block) => block.is_error)).toEqual([true, true]);
    expect(message.content[0]!.content).toMatch(
      /^error \(internal, after 1 attempt\): "proxy__get" ran, but its result cannot be rendered for the model: keys withheld/,
    );
    expect(message.content[1]!.content).toMatch(/"json__get" ran, .*: no JSON today/);
  });
});
