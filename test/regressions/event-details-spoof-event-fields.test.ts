// Regression (issue 9, item 13): a detail named type, tool, callId or attempt overwrote the
// event's own field (a detail `type: 'dispatch.retry'` made the breaker open on a success), and
// in logging a detail named `event` overwrote the record's event type.
import { expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  logging,
  ToolRegistry,
  type CustomDispatchEvent,
  type DispatchEvent,
  type LogRecord,
  type Middleware,
} from '../../index.js';

it("keeps an event's own fields whatever its details are named", async () => {
  const spoof: Middleware = async (ctx, next) => {
    ctx.emit('custom.note', {
      type: 'dispatch.attempt_failed',
      tool: 'other',
      callId: 'x',
      attempt: 99,
      event: 'dispatch.failure',
      kind: 'internal',
    });
    ctx.emit('custom.retry', { type: 'dispatch.retry', kind: 'transient', delayMs: 1 });
    await next();
  };
  const events: (DispatchEvent | CustomDispatchEvent)[] = [];
  const records: LogRecord[] = [];
  const write = (record: LogRecord) => void records.push(record);
  const breaker = circuitBreaker({ failureThreshold: 1 });
  const registry = new ToolRegistry().register({
    name: 'ok.tool',
    inputSchema: z.object({}),
    handler: () => 'fine',
  });
  const dispatcher = createDispatcher(
    [
      logging({ logger: { debug: write, info: write, warn: write, error: write } }),
      breaker,
      spoof,
      ...defaultStack({ registry }),
    ],
    { onEvent: (event) => void events.push(event) },
  );
  for (let i = 0; i < 3; i++) {
    await expect(dispatcher.dispatch('ok.tool', {}, { callId: `c${i}` })).resolves.toMatchObject({
      ok: true,
    });
  }
  expect(breaker.state('ok.tool')).toBe('closed');
  const note = events.find((event) => event.type === 'custom.note');
  expect(note).toMatchObject({ type: 'custom.note', tool: 'ok.tool', callId: 'c0', attempt: 0 });
  expect(records.filter((record) => record.event === 'custom.note')).toHaveLength(3);
  expect(records.some((record) => record.event === 'dispatch.failure')).toBe(false);
});

it('keeps a detail named "__proto__" as a plain field, never as the prototype of the event', async () => {
  const details = JSON.parse('{"__proto__": {"polluted": true}, "note": "hi"}') as Record<string, unknown>;
  const noisy: Middleware = async (ctx, next) => {
    ctx.emit('custom.note', details);
    await next();
  };
  const events: (DispatchEvent | CustomDispatchEvent)[] = [];
  const registry = new ToolRegistry().register({
    name: 'ok.tool',
    inputSchema: z.object({}),
    handler: () => 'fine',
  });
  const dispatcher = createDispatcher([noisy, ...defaultStack({ registry })], {
    onEvent: (event) => void events.push(event),
  });
  await dispatcher.dispatch('ok.tool', {});
  const note = events.find((event) => event.type === 'custom.note') as Record<string, unknown>;
  expect(Object.getPrototypeOf(note)).toBe(Object.prototype);
  expect(Object.hasOwn(note, '__proto__')).toBe(true);
  expect(note['polluted']).toBeUndefined();
  expect(note).toMatchObject({ note: 'hi', type: 'custom.note', tool: 'ok.tool' });
});
