// Regression (issue 9, item 8): a handler that threw a plain `{ name, message, stack }` (an error
// serialised across a process boundary) had the whole object, stack included, stringified into
// the envelope's message; messages with embedded "\n    at …" lines reached the wire too.
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, toToolMessage, ToolRegistry, TransientError } from '../../index.js';

const frame = 'at query (/srv/app/db.js:10:5)';

it('keeps stack frames out of every model-facing and wire message', async () => {
  const thrown: Record<string, () => unknown> = {
    'serialised.error': () => {
      throw { name: 'Error', message: 'db exploded', stack: `Error: db exploded\n    ${frame}` };
    },
    'embedded.frames': () => {
      throw new Error(`db exploded\n    ${frame}\n    at main (/srv/app/index.js:1:1)`);
    },
    'transient.frames': () => {
      throw new TransientError(`busy\n    ${frame}`);
    },
    'object.without.message': () => {
      throw { code: 'E_DB', stack: `Error\n    ${frame}` };
    },
  };
  const registry = new ToolRegistry();
  for (const [name, handler] of Object.entries(thrown)) {
    registry.register({ name, inputSchema: z.object({}), handler });
  }
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
  for (const name of Object.keys(thrown)) {
    const outcome = await dispatcher.dispatch(name, {});
    if (outcome.ok) throw new Error('expected a failure');
    for (const text of [
      outcome.message,
      toToolMessage(outcome),
      JSON.stringify(outcome),
      JSON.stringify(outcome.toJsonRpcError()),
    ]) {
      expect(text).not.toContain('db.js');
      expect(text).not.toMatch(/\bat \S+ \(/);
    }
    expect(outcome.cause).toBeDefined();
  }
  const serialised = await dispatcher.dispatch('serialised.error', {});
  expect(serialised).toMatchObject({ kind: 'internal', message: 'db exploded' });
  expect(await dispatcher.dispatch('object.without.message', {})).toMatchObject({
    message: '{"code":"E_DB"}',
  });
});
