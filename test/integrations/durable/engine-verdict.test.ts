// engineVerdict: which failures a durable engine retries, and which are final.

import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  createDispatcher,
  DispatchError,
  defaultStack,
  ToolRegistry,
  TransientError,
  type DispatchErrorKind,
} from '../../../index.js';
import { engineVerdict } from '../../../integrations/durable/index.js';

const envelope = (kind: DispatchErrorKind, retryAfterMs?: number) =>
  new DispatchError(kind, `failed: ${kind}`, retryAfterMs === undefined ? {} : { retryAfterMs });

describe('engineVerdict', () => {
  it.each(['transient', 'store_unavailable', 'circuit_open', 'cancelled'])(
    'gives %s to the engine',
    (kind) => {
      expect(engineVerdict(envelope(kind))).toEqual({ retry: true, afterMs: undefined });
    },
  );

  it.each([
    'schema',
    'not_found',
    'tool_error',
    'idempotency_conflict',
    'budget_exceeded',
    'internal',
    'outcome_unknown',
    'idempotency_result_unavailable',
    'approval_required',
  ])('keeps %s final', (kind) => {
    expect(engineVerdict(envelope(kind), { idempotent: true })).toEqual({ retry: false });
  });

  it('retries the timeout of an idempotent tool, and never that of a tool that may have acted', () => {
    expect(engineVerdict(envelope('timeout'), { idempotent: true })).toEqual({
      retry: true,
      afterMs: undefined,
    });
    expect(engineVerdict(envelope('timeout'), { idempotent: false })).toEqual({ retry: false });
    expect(engineVerdict(envelope('timeout'))).toEqual({ retry: false });
  });

  it("waits at least the envelope's retryAfterMs", () => {
    expect(engineVerdict(envelope('circuit_open', 4_000))).toEqual({ retry: true, afterMs: 4_000 });
  });

  it('throws a TypeError for anything but an envelope', () => {
    for (const value of [
      undefined,
      new Error('x'),
      { ok: false, kind: 'transient' },
      envelope('transient').toJSON(),
    ]) {
      expect(() => engineVerdict(value as never)).toThrow(TypeError);
    }
    expect(() => engineVerdict(envelope('transient'), 'payments.charge' as never)).toThrow(/^tool /);
  });

  it('hands the engine a transient failure only after the in-process retries are spent', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: () => {
        runs += 1;
        throw new TransientError('backend busy', { retryAfterMs: 1 });
      },
    });
    const dispatcher = createDispatcher(
      defaultStack({ registry, retry: { maxAttempts: 2, baseDelayMs: 1 } }),
    );
    const outcome = await dispatcher.dispatch('search.web', { query: 'x' });
    expect(runs).toBe(2);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok)
      expect(engineVerdict(outcome, registry.get('search.web'))).toMatchObject({ retry: true });
  });
});
