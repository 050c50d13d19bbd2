// The compose parity suite: our compose beside koa-compose 4.2, case by case, then the one
// deliberate difference.
import koaCompose from 'koa-compose';
import { describe, expect, it } from 'vitest';
import { compose, type ComposableMiddleware } from '../middleware/index.js';

type Log = { log: string[] };
type Composer = (
  stack: Array<ComposableMiddleware<Log>>,
) => (ctx: Log, next?: () => Promise<unknown>) => Promise<unknown>;

const implementations: Array<[string, Composer]> = [
  ['koa-compose', (stack) => koaCompose(stack as never) as never],
  ['our compose', (stack) => compose(stack)],
];

describe.each(implementations)('compose parity: %s', (_name, composeWith) => {
  it('runs layers in onion order', async () => {
    const ctx: Log = { log: [] };
    await composeWith([
      async (c, next) => {
        c.log.push('a>');
        await next();
        c.log.push('<a');
      },
      async (c, next) => {
        c.log.push('b>');
        await next();
        c.log.push('<b');
      },
      async (c) => {
        c.log.push('c');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['a>', 'b>', 'c', '<b', '<a']);
  });

  it('passes the innermost return value out through next()', async () => {
    const value = await composeWith([async (_c, next) => next(), async () => 42])({ log: [] });
    expect(value).toBe(42);
  });

  it('flattens nested arrays of layers', async () => {
    const ctx: Log = { log: [] };
    const push =
      (name: string): ComposableMiddleware<Log> =>
      async (c, next) => {
        c.log.push(name);
        await next();
      };
    await composeWith([[push('a'), [push('b')]], push('c')] as never)(ctx);
    expect(ctx.log).toEqual(['a', 'b', 'c']);
  });

  it('resolves an empty stack', async () => {
    await expect(composeWith([])({ log: [] })).resolves.toBeUndefined();
  });

  it('calls the outer next after the last layer', async () => {
    const ctx: Log = { log: [] };
    await composeWith([
      async (c, next) => {
        await next();
        c.log.push('after');
      },
    ])(ctx, async () => {
      ctx.log.push('outer');
    });
    expect(ctx.log).toEqual(['outer', 'after']);
  });

  it('turns a synchronous throw into a rejection', async () => {
    const run = composeWith([
      () => {
        throw new Error('sync');
      },
    ]);
    await expect(run({ log: [] })).rejects.toThrow('sync');
  });

  it('lets an outer layer catch an inner rejection', async () => {
    const ctx: Log = { log: [] };
    await composeWith([
      async (c, next) => {
        try {
          await next();
        } catch (error) {
          c.log.push((error as Error).message);
        }
      },
      async () => {
        throw new Error('inner');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['inner']);
  });

  it('does not run inner layers when a layer skips next()', async () => {
    const ctx: Log = { log: [] };
    await composeWith([
      async () => {},
      async (c) => {
        c.log.push('never');
      },
    ])(ctx);
    expect(ctx.log).toEqual([]);
  });

  it('rejects a second next() while the first is still running', async () => {
    const run = composeWith([
      async (_c, next) => {
        await Promise.all([next(), next()]);
      },
      async () => {
        await new Promise((resolve) => setImmediate(resolve));
      },
    ]);
    await expect(run({ log: [] })).rejects.toThrow('next() called multiple times');
  });

  it('rejects a stack that is not an array of functions', () => {
    expect(() => composeWith('nope' as never)).toThrow(TypeError);
    expect(() => composeWith([42 as never])).toThrow(TypeError);
  });

  it('can run the same composed stack again with a new context', async () => {
    const run = composeWith([
      async (c, next) => {
        c.log.push('x');
        await next();
      },
    ]);
    const first: Log = { log: [] };
    const second: Log = { log: [] };
    await run(first);
    await run(second);
    expect([first.log, second.log]).toEqual([['x'], ['x']]);
  });
});

describe('compose: the deliberate difference from koa-compose', () => {
  const retryTwice: ComposableMiddleware<Log> = async (_c, next) => {
    await next();
    await next();
  };
  const inner: ComposableMiddleware<Log> = async (c) => {
    c.log.push('inner');
  };

  it('koa-compose rejects next() called again after it settled', async () => {
    const run = koaCompose([retryTwice, inner] as never) as unknown as (ctx: Log) => Promise<unknown>;
    await expect(run({ log: [] })).rejects.toThrow('next() called multiple times');
  });

  it('ours runs the inner layers again once the previous next() settled', async () => {
    const ctx: Log = { log: [] };
    await compose([retryTwice, inner])(ctx);
    expect(ctx.log).toEqual(['inner', 'inner']);
  });

  it('ours re-runs inner layers after a rejected next()', async () => {
    const ctx: Log = { log: [] };
    let failures = 1;
    await compose<Log>([
      async (_c, next) => {
        try {
          await next();
        } catch {
          await next();
        }
      },
      async (c) => {
        if (failures-- > 0) throw new Error('first');
        c.log.push('second run');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['second run']);
  });
});

// The same contract as the black-box acceptance suite states it, through the package root.
type Ctx = { log: string[] };
type Mw = (ctx: Ctx, next: () => Promise<unknown>) => unknown;
type BlackBoxComposer = (mws: Mw[]) => (ctx: Ctx, next?: () => Promise<unknown>) => Promise<unknown>;

const impls: [string, BlackBoxComposer][] = [
  ['koa-compose', koaCompose as unknown as BlackBoxComposer],
  ['ours', compose as unknown as BlackBoxComposer],
];

describe.each(impls)('%s', (_name, c) => {
  it('runs in onion order', async () => {
    const ctx: Ctx = { log: [] };
    await c([
      async (x, next) => {
        x.log.push('1>');
        await next();
        x.log.push('<1');
      },
      async (x, next) => {
        x.log.push('2>');
        await next();
        x.log.push('<2');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['1>', '2>', '<2', '<1']);
  });

  it('resolves to the first middleware return value, and next() to the inner one', async () => {
    let inner: unknown;
    const v = await c([
      async (_x, next) => {
        inner = await next();
        return 'outer';
      },
      async () => 'inner',
    ])({ log: [] });
    expect(v).toBe('outer');
    expect(inner).toBe('inner');
  });

  it('a sync throw becomes a rejection, not a sync exception', async () => {
    const fn = c([
      () => {
        throw new Error('sync');
      },
    ]);
    let p: Promise<unknown> | undefined;
    expect(() => {
      p = fn({ log: [] });
    }).not.toThrow();
    await expect(p).rejects.toThrow('sync');
  });

  it('errors propagate to outer try/catch', async () => {
    const ctx: Ctx = { log: [] };
    await c([
      async (x, next) => {
        try {
          await next();
        } catch (e) {
          x.log.push(`caught ${(e as Error).message}`);
        }
      },
      async () => {
        throw new Error('inner');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['caught inner']);
  });

  it('calls the final next passed in, and an empty stack resolves', async () => {
    const ctx: Ctx = { log: [] };
    await c([async (_x, next) => next()])(ctx, async () => {
      ctx.log.push('final');
    });
    expect(ctx.log).toEqual(['final']);
    await expect(c([])(ctx)).resolves.toBeUndefined();
  });

  it('next() called twice concurrently rejects', async () => {
    await expect(
      c([
        async (_x, next) => {
          await Promise.all([next(), next()]);
        },
        async () => {
          await new Promise((r) => setTimeout(r, 1));
        },
      ])({ log: [] }),
    ).rejects.toThrow(/multiple/);
  });

  it('non-array / non-function input is a TypeError', () => {
    expect(() => c('x' as never)).toThrow(TypeError);
    expect(() => c([1 as never])).toThrow(TypeError);
  });
});

describe('the deliberate difference', () => {
  const twice: Mw[] = [
    async (x, next) => {
      await next();
      await next();
      x.log.push('done');
    },
    async (x) => {
      x.log.push('inner');
    },
  ];

  it('koa-compose rejects a second sequential next()', async () => {
    await expect((koaCompose as unknown as BlackBoxComposer)(twice)({ log: [] })).rejects.toThrow(/multiple/);
  });

  it('ours allows a second next() once the first has settled', async () => {
    const ctx: Ctx = { log: [] };
    await (compose as unknown as BlackBoxComposer)(twice)(ctx);
    expect(ctx.log).toEqual(['inner', 'inner', 'done']);
  });

  it('ours allows re-calling next() after it rejected (how retry works)', async () => {
    let n = 0;
    const ctx: Ctx = { log: [] };
    await (compose as unknown as BlackBoxComposer)([
      async (x, next) => {
        try {
          await next();
        } catch {
          await next();
        }
        x.log.push(`n=${n}`);
      },
      async () => {
        if (++n === 1) throw new Error('first');
      },
    ])(ctx);
    expect(ctx.log).toEqual(['n=2']);
  });
});
