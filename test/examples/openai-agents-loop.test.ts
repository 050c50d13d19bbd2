// examples/openai-agents-loop.ts runs to completion against the local Responses server and prints the transcript it promises.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runAgentsLoop } from '../../examples/openai-agents-loop.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/openai-agents-loop', () => {
  // Real timers: the SDK talks HTTP to a local server. The example's own waits (a 100 ms retry
  // backoff, a 30 ms timeout) decide nothing here but how long the run takes.
  it('answers seven parallel calls in call order and charges the retried order once', async () => {
    const lines: string[] = [];
    const summary = await runAgentsLoop({ write: (line) => lines.push(line) });

    const firstAnswers = lines
      .filter((line) => line.startsWith('  tool  ← '))
      .slice(0, 7)
      .map((line) => line.slice(10, 16));
    expect(firstAnswers).toEqual(['call_1', 'call_2', 'call_3', 'call_4', 'call_5', 'call_6', 'call_7']);
    const text = lines.join('\n');
    expect(text).toContain('  tool  ← call_2: {"sku":"A1","inStock":3}');
    expect(text).toMatch(/call_4: error \(tool_error, after 1 attempt\): card declined/);
    expect(text).toMatch(/call_5: error \(timeout, after 1 attempt\): "shipping__quote" timed out/);
    expect(text).toMatch(/call_6: error \(schema\): Invalid args for "docs__search"/);
    // The Runner answers an unknown tool itself (asked to with toolNotFoundBehavior).
    expect(text).toContain("call_7: Tool 'gift__wrap' not found.");
    expect(summary.charged).toEqual(['1042']);
    expect([...summary.failures].sort()).toEqual(['schema', 'timeout', 'tool_error']);
    expect(summary.events).toMatchObject({
      'dispatch.retry': 1,
      'dispatch.timeout': 1,
      'idempotency.hit': 1,
    });
    expect(summary.statuses).toEqual([200, 200, 200, 200]);
    expect(summary.text).toMatch(/^Order 1042 is charged \(once\)/);
  });

  it('runs on its own with tsx and writes nothing to stderr', async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'examples/openai-agents-loop.ts'],
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
