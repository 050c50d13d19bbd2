// examples/otel.ts runs to completion and prints the span tree and the metric totals it promises.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runExample(
  file: string,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', file, ...args],
      { cwd: root, env: { ...process.env, NO_COLOR: '1' }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | null) ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('examples/otel.ts', () => {
  it('prints each tool call as an execute_tool span under the agent turn, with the handler spans inside', async () => {
    const { code, stdout, stderr } = await runExample('examples/otel.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe('agent.turn');
    expect(stdout).toContain('  execute_tool search.web  tool.call.id=call_search  attempts=2  retries=1');
    expect(stdout).toContain('    · dispatch.retry retry.delay_ms=1 error.type=transient');
    expect(stdout.match(/^ {4}http\.get search-api$/gm)).toHaveLength(2);
    expect(stdout).toContain(
      'execute_tool db.report  tool.call.id=call_report  error.type=timeout  attempts=1',
    );
    expect(stdout).toContain('    · dispatch.timeout timeout_ms=20');
    expect(stdout).toContain(
      'execute_tool search.web  tool.call.id=call_bad_args  error.type=schema  attempts=0',
    );
    expect(stdout).toContain(
      'execute_tool weather.now  tool.call.id=call_unknown  error.type=not_found  attempts=0',
    );
    expect(stdout).toMatch(
      /execute_tool pay\.charge {2}tool\.call\.id=call_pay_2 .*idempotency\.source=in_flight {2}links=1/,
    );
    expect(stdout.match(/^ {4}bank\.charge$/gm)).toHaveLength(1);
    expect(stdout).toContain(
      'gen_ai.execute_tool.duration {gen_ai.tool.name=_OTHER, gen_ai.tool.type=function, error.type=not_found} count=1',
    );
    expect(stdout).toContain('tool_dispatcher.retries {gen_ai.tool.name=search.web, error.type=transient} 1');
    expect(stdout).toContain(
      'tool_dispatcher.dedupe_hits {gen_ai.tool.name=pay.charge, tool_dispatcher.idempotency.source=in_flight} 1',
    );
  });

  it('also prints the SDK console exporter output with --console', async () => {
    const { code, stdout, stderr } = await runExample('examples/otel.ts', ['--console']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain("name: 'execute_tool search.web'");
    expect(stdout).toContain("'gen_ai.operation.name': 'execute_tool'");
  });
});
