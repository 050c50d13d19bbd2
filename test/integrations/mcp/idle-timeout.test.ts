// An imported tool's idle timeout (`idleTimeoutMs`): the SDK is asked for progress and restarts
// its timer on each report (`resetTimeoutOnProgress`), capped by the attempt's whole deadline
// (`maxTotalTimeout`), so a long call that keeps reporting runs on, a silent one ends at the idle
// timeout, and one that reports for ever still ends at its total. Fake timers drive both sides.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, importMcpTools } from '../../../integrations/mcp/index.js';
import { flush } from '../../helpers/gate.js';
import { eras, inMemoryClients } from '../../helpers/mcp-clients.js';

const { clientOf } = inMemoryClients();

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// An upstream whose `crunch` reports progress every 150 ms, `reports` times (for ever when
// `Infinity`), then answers; with no reports it never answers.
function upstream(reports: number) {
  const registry = new ToolRegistry().register({
    name: 'crunch',
    inputSchema: z.object({}),
    timeoutMs: Number.POSITIVE_INFINITY,
    handler: async (_args, ctx) => {
      for (let sent = 1; sent <= reports; sent += 1) {
        await sleep(150);
        ctx.progress(sent);
      }
      if (reports === 0) await new Promise(() => {});
      return 'crunched';
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  return createMcpServerFactory({ registry, dispatcher, info: { name: 'slow', version: '1.0.0' } });
}

// Imports `crunch` with a 200 ms idle timeout inside a 1 s total and starts one call.
async function callWithIdleTimeout(reports: number, options: (typeof eras)[number][1]) {
  const client = await clientOf(upstream(reports), options);
  const registry = new ToolRegistry();
  await importMcpTools(client, registry, { configure: () => ({ idleTimeoutMs: 200, timeoutMs: 1_000 }) });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  let settled = false;
  const outcome = dispatcher.dispatch('crunch', {}).finally(() => {
    settled = true;
  });
  return { outcome, settled: () => settled };
}

describe.each(eras)('an imported tool with idleTimeoutMs (%s)', (_era, options) => {
  it('runs past its idle timeout while the remote reports progress', async () => {
    const call = await callWithIdleTimeout(5, options);
    // 750 ms in all, more than three idle timeouts, never 200 ms without a report.
    for (let step = 0; step < 5; step += 1) {
      await vi.advanceTimersByTimeAsync(150);
      await flush();
    }
    expect(await call.outcome).toMatchObject({ ok: true, result: 'crunched' });
  });

  it('ends at the idle timeout when the remote goes silent', async () => {
    const call = await callWithIdleTimeout(0, options);
    await vi.advanceTimersByTimeAsync(199);
    await flush();
    expect(call.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(call.settled()).toBe(true);
    // Not idempotent: the remote may have run it, so its outcome is unknown.
    expect(await call.outcome).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'attempt_timeout',
    });
  });

  it('still ends at its total deadline while the remote reports for ever', async () => {
    const call = await callWithIdleTimeout(Number.POSITIVE_INFINITY, options);
    for (let step = 0; step < 6; step += 1) {
      await vi.advanceTimersByTimeAsync(150);
      await flush();
    }
    expect(call.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect(await call.outcome).toMatchObject({ ok: false, kind: 'timeout' });
  });
});

describe('idleTimeoutMs', () => {
  it.each([0, -1, Number.POSITIVE_INFINITY, '200'])('is refused when it is %s', async (idleTimeoutMs) => {
    const client = await clientOf(upstream(1), eras[0][1]);
    const imported = importMcpTools(client, new ToolRegistry(), {
      configure: () => ({ idleTimeoutMs: idleTimeoutMs as number }),
    });
    await expect(imported).rejects.toThrow(/idleTimeoutMs must be a finite number > 0/);
  });
});
