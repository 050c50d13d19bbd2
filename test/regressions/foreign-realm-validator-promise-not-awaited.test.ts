// Regression (issue 9, item 5): a Standard Schema validator answering with a promise made in
// another realm failed `instanceof Promise`, was read as a synchronous result without issues, and
// the handler ran with `args === undefined`.
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry, type StandardSchemaV1 } from '../../index.js';

const foreignResolve = runInNewContext('(value) => Promise.resolve(value)') as <T>(value: T) => Promise<T>;

function foreignSchema(accept: boolean): StandardSchemaV1<{ n: number }> {
  return {
    '~standard': {
      version: 1,
      vendor: 'vm',
      validate: (value) =>
        foreignResolve(
          accept ? { value: value as { n: number } } : { issues: [{ message: 'n is wrong', path: ['n'] }] },
        ),
    },
  };
}

it('awaits a validator result that is a promise from another realm', async () => {
  expect(foreignResolve(1) instanceof Promise).toBe(false);
  const seen: unknown[] = [];
  const registry = new ToolRegistry()
    .register({
      name: 'calc.ok',
      inputSchema: foreignSchema(true),
      handler: (args) => {
        seen.push(args);
        return args.n;
      },
    })
    .register({ name: 'calc.bad', inputSchema: foreignSchema(false), handler: () => 'never' });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await expect(dispatcher.dispatch('calc.ok', { n: 2 })).resolves.toEqual({
    ok: true,
    result: 2,
    attempts: 1,
  });
  expect(seen).toEqual([{ n: 2 }]);
  await expect(dispatcher.dispatch('calc.bad', { n: 2 })).resolves.toMatchObject({
    kind: 'schema',
    message: 'Invalid args for "calc.bad": n: n is wrong',
  });
});
