// Every example runs to completion on its own and prints what it promises.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runExample(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', file],
      { cwd: root, env: { ...process.env, NO_COLOR: '1' }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | null) ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('examples', () => {
  it('quickstart.ts shows a retry, a timeout, a schema error and a deduplicated charge', async () => {
    const { code, stdout, stderr } = await runExample('examples/quickstart.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/search\.web \(flaky\)\s+→ ok after 3 attempt/);
    expect(stdout).toMatch(/db\.write \(slow\)\s+→ timeout/);
    expect(stdout).toMatch(/→ schema \(code -32602/);
    expect(stdout).toMatch(/payments\.charge \(key 2nd\)\s+→ ok after 0 attempt/);
    expect(stdout).toContain('cards charged: 1');
  });

  it('autopilot.ts prints the p99 of a straggling tool before and after the autopilot', async () => {
    const { code, stderr, stdout } = await runExample('examples/autopilot.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\s+p50\s+p99\s+p99\.9\s+tool calls$/m);
    expect(stdout).toMatch(/^static defaults\s+\d+ ms\s+\d+ ms\s+\d+ ms\s+600$/m);
    expect(stdout).toMatch(/^autopilot\s+\d+ ms\s+\d+ ms\s+\d+ ms\s+6\d\d$/m);
    expect(stdout).toMatch(
      /autopilot hedges after [\d.]+ ms \(p90 of \d+ calls\); p99 -?\d+ % lower for \d+ more tool calls/,
    );
  });

  it('custom-middleware.ts runs its own layer inside the default stack', async () => {
    const { code, stderr, stdout } = await runExample('examples/custom-middleware.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('rate_limited');
  });

  it('rate-limits.ts serves every search behind one bucket and refuses a spent budget', async () => {
    const { code, stderr, stdout } = await runExample('examples/rate-limits.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('searches served: 12 of 12');
    expect(stdout).toContain('summary 3 for globex: ok');
    expect(stdout).toMatch(/summary 4 for globex: budget_exceeded/);
  });

  it('exactly-once.ts reconciles a timed-out charge, refuses an in-doubt refund, and lists the receipts', async () => {
    const { code, stderr, stdout } = await runExample('examples/exactly-once.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /charge \(timed out, reconciled\)\s+→ ok \{"id":"ch_1","amount":25\}, window attempt_timeout/,
    );
    expect(stdout).toMatch(/charge \(same key again\)\s+→ ok after 0 attempts/);
    expect(stdout).toMatch(/refund \(same key again\)\s+→ outcome_unknown, window attempt_timeout/);
    expect(stdout).toContain('do not repeat it, not even under a new idempotency key');
    expect(stdout).toContain('bank ledger rows: 2');
    expect(stdout).toMatch(/order-1042\s+payments\.charge\s+succeeded \(attempt_timeout, by reconcile\)/);
    expect(stdout).toContain('in doubt for an operator: refund-7');
  });

  it('approval-loop.ts pauses a refund, runs it once when approved twice, and never runs a denied one', async () => {
    const { code, stderr, stdout } = await runExample('examples/approval-loop.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/refund 250 \(the model sees\)\s+→ error \(approval_required\)/);
    expect(stdout).toMatch(/refund 250 \(approved, again\)\s+→ \{"refundId":"rf-2"\}/);
    expect(stdout).toMatch(/refund 900 \(denied\)\s+→ error \(approval_denied\).*over the refund limit/);
    expect(stdout).toContain('refunds run: 2 (o-1:40, o-2:250)');
  });

  it('output-guard.ts cuts the model copy and keeps the secret out of the result and the spill', async () => {
    const { code, stderr, stdout } = await runExample('examples/output-guard.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/the model reads \d{3} characters/);
    expect(stdout).toContain('secret in the result: false; in the spill: false');
    expect(stdout).toContain('OPENAI_API_KEY=[REDACTED:api_key]');
  });
});
