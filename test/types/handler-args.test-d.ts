import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry, type Outcome, type ToolContext } from '../../index.js';

describe('handler args are inferred from the schema', () => {
  it('types args as the schema’s output', () => {
    new ToolRegistry().register({
      name: 'db.get_user',
      inputSchema: z.object({ id: z.string(), limit: z.number().default(10) }),
      handler: (args, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ id: string; limit: number }>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        return args.id;
      },
    });
  });

  it('makes a wrong field a compile error', () => {
    new ToolRegistry().register({
      name: 'db.get_user',
      inputSchema: z.object({ id: z.string() }),
      // @ts-expect-error -- `name` is not in the schema
      handler: (args) => args.name,
    });
  });

  it('narrows an outcome on ok', () => {
    const outcome = {} as Outcome<string>;
    if (outcome.ok) expectTypeOf(outcome.result).toEqualTypeOf<string>();
    else expectTypeOf(outcome.kind).toBeString();
  });
});
