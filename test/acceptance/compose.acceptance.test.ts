// compose(): koa-compose's contract, checked side by side with koa-compose itself.
import { describe, expect, it } from 'vitest';
import koaCompose from 'koa-compose';
import { compose } from '../../index.js';

type Ctx = { log: string[] };
type Mw = (ctx: Ctx, next: () => Promise<unknown>) => unknown;
type Composer = (mws: Mw[]) => (ctx: Ctx, next?: () => Promise<unknown>) => Promise<unknown>;

const impls: [string, Composer][] = [
  ['koa-compose', koaCompose as unknown as Composer],
  ['ours', compose as unknown as Composer],
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
    await expect((koaCompose as unknown as Composer)(twice)({ log: [] })).rejects.toThrow(/multiple/);
  });

  it('ours allows a second next() once the first has settled', async () => {
    const ctx: Ctx = { log: [] };
    await (compose as unknown as Composer)(twice)(ctx);
    expect(ctx.log).toEqual(['inner', 'inner', 'done']);
  });

  it('ours allows re-calling next() after it rejected (how retry works)', async () => {
    let n = 0;
    const ctx: Ctx = { log: [] };
    await (compose as unknown as Composer)([
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
