// examples/openai-loop.ts: the OpenAI Chat Completions loop runs to its answer, in process and as a script.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runOpenAILoop } from '../../examples/openai-loop.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/openai-loop', () => {
  it('books the cheapest flight after a retry, a bad-JSON call and an unknown tool', async () => {
    const lines: string[] = [];
    const summary = await runOpenAILoop({ write: (line) => lines.push(line) });
    expect(summary).toEqual({
      answer: 'Booked BK-TP555. I could not search hotels (no such tool), so please book one yourself.',
      turns: 3,
      outcomes: ['ok', 'ok', 'schema', 'ok', 'not_found'],
    });
    const transcript = lines.join('\n');
    expect(transcript).toContain('assistant  → flights__search({"from":"BER","to":"LIS"})  [call_0]');
    expect(transcript).toMatch(/tool {7}← \[call_1\] \(2 attempts\) Lisbon: sunny/);
    expect(transcript).toMatch(
      /\[call_2\] error \(schema\): Arguments for "flights__search" are not valid JSON/,
    );
    expect(transcript).toMatch(/\[call_4\] error \(not_found\): No tool named "hotels__search"/);
  });

  it('runs as a script and prints the transcript', async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'examples/openai-loop.ts'],
          { cwd: root, timeout: 30_000 },
          (error, out, err) => resolve({ code: error ? 1 : 0, stdout: out, stderr: err }),
        );
      },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^user {7}Fly me from Berlin to Lisbon/);
    expect(stdout).toMatch(/assistant {2}Booked BK-TP555\./);
  });
});
