// Regression (issue 9, item 4): ArkType types are callable functions, and register() required
// `typeof inputSchema === 'object'`, so a valid Standard Schema validator was refused.
import { expect, it } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry, type StandardSchemaV1 } from '../../index.js';

it('registers a validator that is a function with ~standard.validate, as ArkType types are', async () => {
  // The shape of an ArkType type: a callable that also carries the Standard Schema props.
  const callable = Object.assign((value: unknown) => value, {
    '~standard': {
      version: 1 as const,
      vendor: 'arktype',
      validate: (value: unknown) =>
        typeof (value as { n?: unknown }).n === 'number'
          ? { value: value as { n: number } }
          : { issues: [{ message: 'must be a number', path: ['n'] }] },
    },
  }) as StandardSchemaV1<{ n: number }>;
  const registry = new ToolRegistry().register({
    name: 'calc.double',
    inputSchema: callable,
    handler: ({ n }) => n * 2,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await expect(dispatcher.dispatch('calc.double', { n: 2 })).resolves.toEqual({
    ok: true,
    result: 4,
    attempts: 1,
  });
  await expect(dispatcher.dispatch('calc.double', { n: 'x' })).resolves.toMatchObject({ kind: 'schema' });
  expect(() =>
    new ToolRegistry().register({ name: 'calc.bad', inputSchema: (() => 1) as never, handler: () => 1 }),
  ).toThrow(TypeError);
});
