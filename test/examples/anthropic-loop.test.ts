// examples/anthropic-loop.ts: the hand-written Messages loop and the SDK tool runner both reach the refund.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runAnthropicLoop } from '../../examples/anthropic-loop.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/anthropic-loop', () => {
  it('refunds the order after a declined amount and an unknown tool, by hand and through the runner', async () => {
    const lines: string[] = [];
    const summary = await runAnthropicLoop({ write: (line) => lines.push(line) });
    expect(summary).toEqual({
      answer: 'Done: {"refunded":80,"orderId":"A-17"}',
      runnerAnswer: 'Done: {"refunded":80,"orderId":"A-17"}',
      outcomes: ['ok', 'tool_error', 'not_found', 'ok'],
    });
    const transcript = lines.join('\n');
    expect(transcript).toMatch(
      /← \[toolu_1\] is_error error \(tool_error, after 1 attempt\): Refund of 95 exceeds the order total of 80/,
    );
    expect(transcript).toMatch(/← \[toolu_2\] is_error error \(not_found\): No tool named "loyalty__points"/);
    // Through the runner: it answers the unknown tool itself, and sends our failure text as it is
    // (the demo passes the SDK's ToolError, so no doubled "Error: error").
    expect(transcript).toMatch(/← \[toolu_5\] is_error error \(tool_error, after 1 attempt\)/);
    expect(transcript).not.toMatch(/Error: error/);
    expect(transcript).toMatch(/← \[toolu_6\] is_error Error: Tool 'loyalty__points' not found/);
  });

  it('runs as a script and prints both transcripts', async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'examples/anthropic-loop.ts'],
          { cwd: root, timeout: 30_000 },
          (error, out, err) => resolve({ code: error ? 1 : 0, stdout: out, stderr: err }),
        );
      },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('— hand-written loop (runToolUses)');
    expect(stdout).toContain('— the SDK tool runner (runnableTools)');
  });
});
