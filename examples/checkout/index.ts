/**
 * The checkout the AI SDK, LangChain and OpenAI Agents loop examples share: four tools with
 * in-memory backends, each scripted to show one behaviour; the model's seven calls; and the
 * dispatcher with an event count. Each example keeps only what its host does differently.
 * @module
 */

import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  type Dispatcher,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../../index.js';

/** The user's request. */
export const checkoutPrompt =
  'Refund order 1042, charge its replacement and order 1043, and quote shipping to 10115.';

/** The model's final answer after the first turn's results. */
export const checkoutAnswer =
  'Order 1042 is charged (once) and in stock; 1043 was declined and shipping had no quote in time.';

/** One tool call the model makes, by wire name. */
export interface CheckoutCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/**
 * The model's first turn: seven calls at once, showing a success, a retry, a charge, a declined
 * card, a timeout, a schema error and an unknown tool.
 */
export const checkoutCalls: readonly CheckoutCall[] = [
  { id: 'call_1', name: 'docs__search', args: { query: 'refund policy' } },
  { id: 'call_2', name: 'inventory__check', args: { sku: 'A1' } },
  { id: 'call_3', name: 'orders__charge', args: { order: '1042', amount: 40 } },
  { id: 'call_4', name: 'orders__charge', args: { order: '1043', amount: 5000 } },
  { id: 'call_5', name: 'shipping__quote', args: { zip: '10115' } },
  { id: 'call_6', name: 'docs__search', args: { query: 7 } },
  { id: 'call_7', name: 'gift__wrap', args: {} },
];

/** The charge the provider replays (as after a dropped connection): the cache answers it. */
export const replayedCharge: CheckoutCall = checkoutCalls[2]!;

/** The checkout's state: the orders really charged and the dispatcher's events by type. */
export interface Checkout {
  readonly registry: ToolRegistry;
  readonly dispatcher: Dispatcher;
  /** Orders really charged (a replayed call charges nothing). */
  readonly charged: string[];
  /** How many structured events of each type the dispatcher emitted. */
  readonly events: Record<string, number>;
  /** The closing lines of a transcript: orders charged, the failures the app saw, the events. */
  summary(failures: readonly string[], heard?: string): string[];
}

/**
 * The checkout tools behind the default stack (retry jitter off, so a run is repeatable).
 *
 * @example
 * const { registry, dispatcher, charged } = createCheckout();
 */
export function createCheckout(): Checkout {
  const charged: string[] = [];
  const events: Record<string, number> = {};
  const registry = checkoutTools(charged);
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }), {
    onEvent: (event) => {
      events[event.type] = (events[event.type] ?? 0) + 1;
    },
  });
  const shown = ['dispatch.retry', 'dispatch.timeout', 'idempotency.hit', 'dispatch.failure'];
  return {
    registry,
    dispatcher,
    charged,
    events,
    summary: (failures, heard = 'saw') => [
      '---',
      `orders charged: ${charged.join(', ')} (${charged.length})`,
      `failures the app ${heard}: ${failures.join(', ')}`,
      `events: ${shown.map((type) => `${type}=${events[type] ?? 0}`).join(' ')}`,
    ],
  };
}

function checkoutTools(charged: string[]): ToolRegistry {
  let inventoryRequests = 0;
  return new ToolRegistry()
    .register({
      name: 'docs.search',
      description: 'Searches the help centre.',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: ({ query }) => ({ hits: [`${query}: 30 days, original payment method`] }),
    })
    .register({
      name: 'inventory.check',
      description: 'Stock for a SKU (its backend drops the first request).',
      inputSchema: z.object({ sku: z.string() }),
      idempotent: true,
      handler: ({ sku }) => {
        inventoryRequests += 1;
        if (inventoryRequests === 1) throw new TransientError('connection reset');
        return { sku, inStock: 3 };
      },
    })
    .register({
      name: 'orders.charge',
      description: 'Charges an order (cards decline above 1000).',
      inputSchema: z.object({ order: z.string(), amount: z.number().positive() }),
      handler: ({ order, amount }) => {
        if (amount > 1000) throw new ToolError(`card declined for order ${order}`);
        charged.push(order);
        return `charged ${amount} to order ${order}`;
      },
    })
    .register({
      name: 'shipping.quote',
      description: 'A shipping quote (its carrier never answers in time).',
      inputSchema: z.object({ zip: z.string() }),
      timeoutMs: 30,
      handler: (_args, ctx) =>
        new Promise<never>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
        ),
    });
}
