// Simulated tools for the harness-loop demo: in-memory backends with scripted latency and failures.

import { z } from 'zod';
import { ToolRegistry, TransientError } from '../index.js';

/** Options for `createSimulatedTools`. */
export interface SimulatedToolsOptions {
  /**
   * Multiplies every latency and timeout, so a test can shrink the run.
   * @default 1
   */
  timeScale?: number;
}

/** What the simulated backends did, for the demo's summary. */
export interface SimulatedBackends {
  /** Charges the payment backend really made (a deduplicated call makes none). */
  readonly charges: number;
  /** Rows the database committed, by id. */
  readonly rows: ReadonlyMap<string, string>;
  /** Handler invocations per tool, whatever their outcome. */
  readonly invocations: Readonly<Record<string, number>>;
}

/** The per-attempt timeout of `db.write`, in milliseconds before scaling. */
export const dbWriteTimeoutMs = 300;

/**
 * Builds a registry of four tools over in-memory backends, each scripted to show one behaviour:
 *
 * - `search.web` (idempotent): its backend answers 503 twice, then works;
 * - `db.write` (not idempotent, 300 ms timeout): the first write hangs on a lock, later ones are quick;
 * - `payments.charge` (not idempotent): counts the charges it really makes;
 * - `inventory.lookup` (idempotent): its database is down, every call fails.
 *
 * No tool named `files.delete` exists: the model asks for it anyway.
 *
 * @example
 * const { registry, backends } = createSimulatedTools({ timeScale: 0.1 });
 * createDispatcher(defaultStack({ registry }));
 */
export function createSimulatedTools(options: SimulatedToolsOptions = {}): {
  registry: ToolRegistry;
  backends: SimulatedBackends;
} {
  const { timeScale = 1 } = options;
  const ms = (value: number) => value * timeScale;
  const invocations: Record<string, number> = {};
  const rows = new Map<string, string>();
  let charges = 0;
  let searchRequests = 0;
  let writeRequests = 0;
  const invoked = (tool: string) => {
    invocations[tool] = (invocations[tool] ?? 0) + 1;
  };

  const registry = new ToolRegistry()
    .register({
      name: 'search.web',
      description: 'Searches the web and returns the top hits.',
      inputSchema: z.object({
        query: z.string().min(1),
        limit: z.number().int().min(1).max(5).default(2),
      }),
      idempotent: true,
      handler: async ({ query, limit }, { signal }) => {
        invoked('search.web');
        await delay(ms(40), signal);
        searchRequests += 1;
        // The backend is overloaded at first: the first two requests get a 503.
        if (searchRequests <= 2) throw new TransientError('search backend answered 503 Service Unavailable');
        return {
          hits: Array.from({ length: limit }, (_, index) => ({
            title: `${query} (result ${index + 1})`,
            url: `https://example.org/${encodeURIComponent(query)}/${index + 1}`,
          })),
        };
      },
    })
    .register({
      name: 'db.write',
      description: 'Saves a note under an id. Not marked idempotent, so it is never retried after a timeout.',
      inputSchema: z.object({ id: z.string().min(1), text: z.string() }),
      timeoutMs: ms(dbWriteTimeoutMs),
      handler: async ({ id, text }, { signal }) => {
        invoked('db.write');
        writeRequests += 1;
        // The first write waits on a row lock far longer than the tool's timeout; the timeout
        // aborts `signal`, the wait stops and nothing is committed.
        await delay(ms(writeRequests === 1 ? 2_000 : 60), signal);
        rows.set(id, text);
        return { id, committed: true };
      },
    })
    .register({
      name: 'payments.charge',
      description: 'Charges an order. Send an idempotency key: a repeated charge costs money.',
      inputSchema: z.object({ orderId: z.string().min(1), amountCents: z.number().int().positive() }),
      handler: async ({ orderId, amountCents }, { signal }) => {
        invoked('payments.charge');
        await delay(ms(120), signal);
        charges += 1;
        return { chargeId: `ch_${charges}`, orderId, amountCents };
      },
    })
    .register({
      name: 'inventory.lookup',
      description: 'Returns the stock level of a SKU.',
      inputSchema: z.object({ sku: z.string().min(1) }),
      idempotent: true,
      handler: async (_args, { signal }) => {
        invoked('inventory.lookup');
        await delay(ms(20), signal);
        // Not a TransientError: the retry layer leaves it alone, the circuit breaker counts it.
        throw new Error('inventory database refused the connection (ECONNREFUSED)');
      },
    });

  return {
    registry,
    backends: {
      get charges() {
        return charges;
      },
      rows,
      invocations,
    },
  };
}

/**
 * Waits `ms` on the global timers (so fake timers drive it), or rejects as soon as `signal`
 * aborts, clearing its timer so an abandoned handler never keeps the process alive.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
