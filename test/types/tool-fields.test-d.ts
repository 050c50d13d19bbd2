import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry, type ApprovalCall, type StandardSchemaV1, type Tool } from '../../index.js';

// A third-party layer declares its own tool field, as docs/writing-middleware.md shows.
declare module '../../index.js' {
  interface ToolDefinition<Schema extends StandardSchemaV1 = StandardSchemaV1, Result = unknown> {
    /** A test layer's field, typed from the tool's args. */
    testLayerKey?: (args: StandardSchemaV1.InferOutput<Schema>) => string;
  }
}

describe('a layer’s tool fields merge into the core’s tool types', () => {
  it('types the built-in layers’ fields from the tool’s args and result', () => {
    new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      handler: ({ amount }) => ({ refunded: amount }),
      settle: (result, args) => {
        expectTypeOf(result).toEqualTypeOf<{ refunded: number }>();
        expectTypeOf(args).toEqualTypeOf<{ amount: number }>();
        return result.refunded;
      },
      requiresApproval: (args, call) => {
        expectTypeOf(args).toEqualTypeOf<{ amount: number }>();
        expectTypeOf(call).toEqualTypeOf<ApprovalCall>();
        return args.amount > 100;
      },
    });
    expectTypeOf<Tool['settle']>().toEqualTypeOf<((result: never, args: never) => number) | undefined>();
  });

  it('checks a merged field as the core’s own', () => {
    new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      handler: () => 1,
      // @ts-expect-error -- a success's actual cost is a number
      settle: () => 'one',
    });
    new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      handler: () => 1,
      testLayerKey: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ amount: number }>();
        return String(args.amount);
      },
    });
  });
});
