// A real pino logger through logging({ logger }): one JSON line per event, at the event's level.

import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, logging, ToolRegistry, TransientError } from '../../../index.js';
import { flush } from '../../helpers/gate.js';
import { manualClock } from './harness.js';

interface Line {
  level: number;
  event: string;
  tool: string;
  callId: string;
  attempt: number;
  durationMs: number;
  kind?: string;
  [detail: string]: unknown;
}

function capture() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n'))
        if (text !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { lines, stream };
}

const pinoLevels = { debug: 20, info: 30, warn: 40, error: 50 };

describe('logging with a real pino logger', () => {
  it('writes each event of a retried call as one JSON line at its level', async () => {
    const { lines, stream } = capture();
    const logger = pino({ level: 'debug', base: null, timestamp: false }, stream);
    const clock = manualClock();
    let calls = 0;
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ q: z.string() }),
      handler: () => {
        calls += 1;
        if (calls === 1) throw new TransientError('503 from upstream');
        return 'hits';
      },
    });
    const dispatcher = createDispatcher([
      logging({ logger }),
      ...defaultStack({ registry, retry: { clock, random: () => 0 } }),
    ]);
    const pending = dispatcher.dispatch('search.web', { q: 'agents' }, { callId: 'call_1' });
    await flush();
    clock.fire();
    expect(await pending).toEqual({ ok: true, result: 'hits', attempts: 2 });
    await flush();

    const events = lines.map((line) => [line.event, line.level]);
    expect(events).toEqual([
      ['dispatch.attempt', pinoLevels.debug],
      ['dispatch.attempt_failed', pinoLevels.debug],
      ['dispatch.retry', pinoLevels.warn],
      ['dispatch.attempt', pinoLevels.debug],
      ['dispatch.success', pinoLevels.info],
    ]);
    for (const line of lines) expect(line).toMatchObject({ tool: 'search.web', callId: 'call_1' });
    expect(lines[2]).toMatchObject({ kind: 'transient', delayMs: 100, attempt: 1 });
    expect(lines[4]).toMatchObject({ attempts: 2, attempt: 2 });
    expect(typeof lines[4]?.durationMs).toBe('number');
    // No stack or cause reaches a log line.
    expect(JSON.stringify(lines)).not.toMatch(/"(stack|cause)"/);
  });

  it('keeps to the threshold and writes failures at error', async () => {
    const { lines, stream } = capture();
    const logger = pino({ level: 'info', base: null, timestamp: false }, stream);
    const registry = new ToolRegistry();
    const dispatcher = createDispatcher([logging({ logger, level: 'info' }), ...defaultStack({ registry })]);
    expect(await dispatcher.dispatch('ghost', {})).toMatchObject({ kind: 'not_found' });
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({
        level: pinoLevels.error,
        event: 'dispatch.failure',
        kind: 'not_found',
        attempts: 0,
      }),
    ]);
  });
});
