// Regression (issue 9, items 11 and 12): compose([[a, b], c]) threw, where koa-compose 4.2.0
// flattens nested arrays; and compose(defaultStack(...)) was not assignable to Middleware.
import koaCompose from 'koa-compose';
import { expect, expectTypeOf, it } from 'vitest';
import { defaultStack, ToolRegistry, type Middleware } from '../../index.js';
import { compose } from '../../middleware/index.js';

type Log = { log: string[] };
const layer = (name: string) => async (ctx: Log, next: () => Promise<unknown>) => {
  ctx.log.push(`${name}>`);
  await next();
  ctx.log.push(`<${name}`);
};

it('flattens nested arrays as koa-compose 4.2 does', async () => {
  const stack = [[layer('a'), [layer('b')]], layer('c')];
  const ours: Log = { log: [] };
  const koa: Log = { log: [] };
  await compose<Log>(stack)(ours);
  await koaCompose(stack as never)(koa as never, undefined as never);
  expect(ours.log).toEqual(['a>', 'b>', 'c>', '<c', '<b', '<a']);
  expect(ours.log).toEqual(koa.log);
  expect(() => compose([[layer('a'), 'x' as never]])).toThrow(TypeError);
});

it('types a composed stack as a Middleware', () => {
  const nested = compose(defaultStack({ registry: new ToolRegistry() }));
  expectTypeOf(nested).toMatchTypeOf<Middleware>();
  const asLayer: Middleware = nested;
  expect(typeof asLayer).toBe('function');
});
