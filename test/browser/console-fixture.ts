// The console's browser test fixture: a real dispatcher (default stack, approval gate, breaker,
// receipts) over a registry of a few tools, and a real console served on a loopback port.

import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import {
  type ApprovalAuditRecord,
  type ApprovalStore,
  approvalGate,
  createDispatcher,
  createRedactor,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
} from '../../index.js';
import { toolHealth } from '../../integrations/console/health.js';
import { inDoubtDesk } from '../../integrations/console/in-doubt.js';
import { controlRoom } from '../../integrations/console/index.js';
import { circuitBreaker, memoryReceiptStore } from '../../middleware/index.js';

/** The console's token in the test (never shown on the page). */
export const consoleToken = 'td-console-browser-test-0123456789';

/** A live API key carried in the refunds' args: the redactor must keep it off the page. */
export const liveKey = 'sk-live-4eC39HqLyjWDarjtT1zdp7dcQx';

/** What the fixture's tools did, for the test to assert on. */
export interface ToolRuns {
  /** Runs of the `payments.refund` handler, by order id. */
  readonly refunds: string[];
  /** Whether the bank answers `payments.charge`'s `reconcile` (else the verdict is `unknown`). */
  bankAnswers: boolean;
}

/** Builds the registry: a gated refund, a quick lookup, a failing search, a charge and a payout that time out. */
export function consoleRegistry(runs: ToolRuns): ToolRegistry {
  const ledger = new Map<string, string>();
  const hang = (key: string | undefined, signal: AbortSignal) => {
    ledger.set(key ?? '', `ch_${ledger.size + 1}`);
    return new Promise<never>((_resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  };
  return new ToolRegistry()
    .register({
      name: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number().positive(), note: z.string() }),
      requiresApproval: true,
      handler: ({ orderId }) => {
        runs.refunds.push(orderId);
        return { refundId: `rf-${runs.refunds.length}` };
      },
    })
    .register({
      name: 'orders.lookup',
      inputSchema: z.object({ orderId: z.string() }),
      cost: 2,
      annotations: { readOnlyHint: true },
      handler: ({ orderId }) => ({ orderId, status: 'delivered' }),
    })
    .register({
      name: 'search.web',
      inputSchema: z.object({ q: z.string() }),
      annotations: { readOnlyHint: true },
      handler: () => {
        throw new Error('the search backend is down');
      },
    })
    .register({
      name: 'payments.charge',
      inputSchema: z.object({ amount: z.number().positive() }),
      requiresApproval: false,
      timeoutMs: 50,
      handler: (_args, { idempotencyKey, signal }) => hang(idempotencyKey, signal),
      reconcile: (_args, { idempotencyKey }) => {
        if (!runs.bankAnswers) return 'unknown';
        const charge = ledger.get(idempotencyKey ?? '');
        return charge === undefined
          ? 'not_committed'
          : { status: 'committed', evidence: { chargeId: charge } };
      },
    })
    .register({
      name: 'payments.payout',
      inputSchema: z.object({ amount: z.number().positive() }),
      requiresApproval: false,
      timeoutMs: 50,
      handler: (_args, { idempotencyKey, signal }) => hang(`payout:${idempotencyKey}`, signal),
    });
}

/**
 * The gate's store: a memory store on a clock the test moves on, whose decisions reach its
 * subscribers (the console's event streams among them) only while they are not held: a decision
 * can then be made (or a request expire) before an open page hears of it.
 */
function heldApprovalStore() {
  let offsetMs = 0;
  const inner = memoryApprovalStore({ clock: { now: () => Date.now() + offsetMs } });
  let held: (() => void)[] | undefined;
  const store: ApprovalStore = {
    edits: true,
    open: (request) => inner.open(request),
    get: (token) => inner.get(token),
    answer: (token, answer) => inner.answer(token, answer),
    redeem: (token, claim) => inner.redeem?.(token, claim),
    settle: (token, claim, settlement) => inner.settle?.(token, claim, settlement),
    list: (query) => inner.list?.(query) ?? { items: [] },
    audit: (query) => inner.audit?.(query) ?? { items: [] },
    subscribe(listener) {
      let live = true;
      const stop = inner.subscribe?.((decided: ApprovalAuditRecord) => {
        if (held === undefined) listener(decided);
        else held.push(() => live && listener(decided));
      });
      return () => {
        live = false;
        stop?.();
      };
    },
  };
  return {
    store,
    /** Moves the store's clock on by `ms` (a request whose time is up expires at its next read). */
    advance(ms: number) {
      offsetMs += ms;
    },
    /** Holds every decision from the subscribers until `release`. */
    hold() {
      held ??= [];
    },
    /** Delivers the held decisions, in order, and holds no more. */
    release() {
      const due = held ?? [];
      held = undefined;
      for (const deliver of due) deliver();
    },
  };
}

/** The dispatcher, gate and receipts behind a console served at `url` (its base path `/console`). */
export async function startConsole(runs: ToolRuns) {
  const registry = consoleRegistry(runs);
  const receipts = memoryReceiptStore();
  const approvals = heldApprovalStore();
  const gate = approvalGate({ registry, store: approvals.store });
  const redact = createRedactor();
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      approvals: gate,
      idempotency: { receipts },
      breaker: circuitBreaker({ failureThreshold: 3, cooldownMs: 600_000 }),
      retry: { baseDelayMs: 5, jitter: 0 },
      // A burst of 20 takes the 10 in the bucket, waits for a few more and is refused the rest.
      rateLimit: { rate: 10, burst: 10, maxWaitMs: 250 },
      windowedBudget: { key: (ctx) => ctx.options.tenant, limit: 1_000, windowMs: 600_000 },
    }),
    { redact },
  );
  // The panes' sources over the same dispatcher, receipts and registry, given explicitly so the
  // test does not depend on which sources controlRoom builds by itself.
  const health = toolHealth({ dispatcher });
  const inDoubt = inDoubtDesk({ receipts, registry, redact });
  const room = controlRoom({
    token: consoleToken,
    gate,
    dispatcher,
    receipts,
    registry,
    redact,
    health,
    inDoubt,
  });
  const server = http.createServer(room.handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    registry,
    receipts,
    gate,
    dispatcher,
    origin,
    url: `${origin}/console`,
    /** The approval store's clock and its held decisions. */
    approvals: {
      advance: approvals.advance,
      hold: approvals.hold,
      release: approvals.release,
    },
    /** Cuts every open connection (the page's event stream among them), as a proxy restart would. */
    dropConnections() {
      server.closeAllConnections();
    },
    async close() {
      await room.close();
      health.close();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
