// examples/ai-sdk-loop.ts runs to completion and prints the transcript it promises.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runAiSdkLoop } from '../../examples/ai-sdk-loop.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/ai-sdk-loop', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers seven parallel calls in call order and charges the replayed order once', async () => {
    // Fake timers drive the example's retry backoff and 30 ms timeout, so every run takes the same path.
    vi.useFakeTimers();
    const lines: string[] = [];
    const run = runAiSdkLoop({ write: (line) => lines.push(line) });
    await vi.runAllTimersAsync();
    const summary = await run;

    const results = lines.filter((line) => line.startsWith('  tool  ← ')).map((line) => line.slice(10, 16));
    expect(results).toEqual(['call_1', 'call_2', 'call_3', 'call_4', 'call_5', 'call_6', 'call_7', 'call_3']);
    expect(lines).toContain('  tool  ← call_2 inventory__check: {"sku":"A1","inStock":3}');
    expect(lines.join('\n')).toMatch(
      /call_4 orders__charge: \[error\] error \(tool_error, after 1 attempt\): card declined/,
    );
    expect(lines.join('\n')).toMatch(
      /call_5 shipping__quote: \[error\] error \(timeout, after 1 attempt\): "shipping__quote" timed out/,
    );
    expect(lines.join('\n')).toMatch(
      /call_6 docs__search: \[error\] error \(schema\): Invalid args for "docs__search"/,
    );
    // The SDK answers an unknown tool itself (AI SDK 7 prefixes the error's name).
    expect(lines.join('\n')).toMatch(
      /call_7 gift__wrap: \[error\] (AI_NoSuchToolError: )?Model tried to call unavailable tool 'gift__wrap'/,
    );
    expect(summary.charged).toEqual(['1042']);
    expect(summary.failures).toEqual(['tool_error', 'timeout', 'schema']);
    expect(summary.events).toMatchObject({
      'dispatch.retry': 1,
      'dispatch.timeout': 1,
      'idempotency.hit': 1,
    });
    expect(summary.text).toMatch(/^Order 1042 is charged \(once\)/);
  });

  it('runs on its own with tsx and writes nothing to stderr', async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'examples/ai-sdk-loop.ts'],
          { cwd: root, timeout: 30_000 },
          (error, out, err) => resolve({ code: error ? 1 : 0, stdout: out, stderr: err }),
        );
      },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('orders charged: 1042 (1)');
  });
});
