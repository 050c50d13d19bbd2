// The small layers alone: error mapping, tool lookup, schema validation, budget guard.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  budgetGuard,
  createBudget,
  createDispatcher,
  DispatchError,
  errorMapping,
  schemaValidation,
  ToolRegistry,
  toolLookup,
  TransientError,
  type Middleware,
  type StandardSchemaV1,
} from '../../index.js';

const registry = new ToolRegistry().register({
  name: 'echo.args',
  inputSchema: z.object({ text: z.string().trim() }),
  handler: (args) => args,
});

describe('errorMapping', () => {
  it.each([
    [new DispatchError('rate_limited', 'slow down'), 'rate_limited'],
    [new TransientError('later'), 'transient'],
    [new Error('bug'), 'internal'],
    ['a string', 'internal'],
  ])('records %s thrown by a layer as %s, never rethrowing', async (thrown, kind) => {
    const throwing: Middleware = async () => {
      throw thrown;
    };
    const dispatcher = createDispatcher([errorMapping(), throwing]);
    expect(await dispatcher.dispatch('echo.args', {})).toMatchObject({ ok: false, kind });
  });

  it('keeps a custom kind’s explicit JSON-RPC code', async () => {
    const throwing: Middleware = async () => {
      throw new DispatchError('rate_limited', 'slow down', { jsonrpcCode: -32602 });
    };
    const outcome = await createDispatcher([errorMapping(), throwing]).dispatch('x', {});
    expect(outcome).toMatchObject({ jsonrpcCode: -32602 });
  });
});

describe('toolLookup', () => {
  it('sets ctx.tool for a known name', async () => {
    let seen: string | undefined;
    const spy: Middleware = async (ctx, next) => {
      seen = ctx.tool?.name;
      await next();
    };
    await createDispatcher([errorMapping(), toolLookup(registry), spy]).dispatch('echo.args', { text: 'a' });
    expect(seen).toBe('echo.args');
  });

  it('finds tools registered after the dispatcher was made', async () => {
    const late = new ToolRegistry();
    const dispatcher = createDispatcher([errorMapping(), toolLookup(late)]);
    late.register({ name: 'late.tool', inputSchema: z.object({}), handler: () => 'here' });
    expect(await dispatcher.dispatch('late.tool', {})).toMatchObject({ ok: true, result: 'here' });
  });

  it('throws a TypeError without a registry', () => {
    expect(() => toolLookup(undefined as never)).toThrow(TypeError);
  });
});

describe('schemaValidation', () => {
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation()]);

  it('hands the handler the parsed value', async () => {
    expect(await dispatcher.dispatch('echo.args', { text: '  hi  ' })).toMatchObject({
      result: { text: 'hi' },
    });
  });

  it('rejects args nesting deeper than maxDepth', async () => {
    const shallow = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      schemaValidation({ maxDepth: 3 }),
    ]);
    const outcome = await shallow.dispatch('echo.args', { text: 'a', deep: { a: { b: { c: 1 } } } });
    expect(outcome).toMatchObject({ kind: 'schema' });
    expect(outcome.ok ? '' : outcome.message).toMatch(/deeper than 3/);
  });

  it('accepts any Standard Schema v1 validator, sync or async', async () => {
    const evenOnly: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'handmade',
        validate: async (value) => {
          const n = (value as { n?: unknown }).n;
          return typeof n === 'number' && n % 2 === 0
            ? { value: { n } }
            : { issues: [{ message: 'must be even', path: [{ key: 'n' }] }] };
        },
      },
    };
    const custom = new ToolRegistry().register({
      name: 'even.n',
      inputSchema: evenOnly,
      handler: ({ n }) => n / 2,
    });
    const d = createDispatcher([errorMapping(), toolLookup(custom), schemaValidation()]);
    expect(await d.dispatch('even.n', { n: 4 })).toMatchObject({ result: 2 });
    expect(await d.dispatch('even.n', { n: 3 })).toMatchObject({
      kind: 'schema',
      message: 'Invalid args for "even.n": n: must be even',
    });
  });

  it('turns a validator that throws into a schema error', async () => {
    const broken: StandardSchemaV1 = {
      '~standard': {
        version: 1,
        vendor: 'broken',
        validate: () => {
          throw new Error('validator bug');
        },
      },
    };
    const custom = new ToolRegistry().register({ name: 'broken.v', inputSchema: broken, handler: () => 1 });
    const d = createDispatcher([errorMapping(), toolLookup(custom), schemaValidation()]);
    expect(await d.dispatch('broken.v', {})).toMatchObject({ kind: 'schema' });
  });

  it('rejects a bad maxDepth with a TypeError naming it', () => {
    expect(() => schemaValidation({ maxDepth: 0 })).toThrow(/maxDepth/);
  });
});

describe('budgetGuard', () => {
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), budgetGuard()]);

  it('fails fast for a spent shared budget and lets a live one through', async () => {
    expect(await dispatcher.dispatch('echo.args', { text: 'a' }, { budget: createBudget(0) })).toMatchObject({
      kind: 'budget_exceeded',
      attempts: 0,
    });
    const budget = createBudget(1);
    expect(await dispatcher.dispatch('echo.args', { text: 'a' }, { budget })).toMatchObject({ ok: true });
    expect(budget.remaining).toBe(0);
  });

  it('lets calls without a budget through', async () => {
    expect(await dispatcher.dispatch('echo.args', { text: 'a' })).toMatchObject({ ok: true });
  });
});
