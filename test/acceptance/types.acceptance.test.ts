// Type-level acceptance (checked by `tsc`, i.e. `npm test`'s typecheck) plus trivial runtime asserts.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  DispatchError,
  ToolRegistry,
  createDispatcher,
  defaultStack,
  type DispatchErrorKind,
  type Outcome,
  type ToolContext,
} from '../../index.js';

describe('types', () => {
  it('handler args are inferred from the zod schema (output type, defaults applied)', async () => {
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ query: z.string(), limit: z.number().default(5) }),
      handler: async (args, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ query: string; limit: number }>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        expectTypeOf(ctx.attempt).toEqualTypeOf<number>();
        expectTypeOf(ctx.idempotencyKey).toEqualTypeOf<string | undefined>();
        return args.limit;
      },
    });
    const d = createDispatcher(defaultStack({ registry }));
    const out = await d.dispatch<number>('search.web', { query: 'x' });
    expectTypeOf(out).toEqualTypeOf<Outcome<number>>();
    if (out.ok) {
      expectTypeOf(out.result).toEqualTypeOf<number>();
      expect(out.result).toBe(5);
    } else {
      expectTypeOf(out).toMatchTypeOf<DispatchError>();
      expectTypeOf(out.kind).toEqualTypeOf<DispatchErrorKind>();
    }
  });

  it('custom kinds are allowed by the type', () => {
    const k: DispatchErrorKind = 'rate_limited';
    expect(new DispatchError(k, 'x').kind).toBe('rate_limited');
  });
});
