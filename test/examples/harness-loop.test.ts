import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runDemo, type DemoSummary, type ToolRow } from '../../examples/harness-loop.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

// Fake timers drive the demo's real-timer code (the library's systemClock and the simulated
// backends both read the globals on every call), so every run takes the same path.
async function runWithFakeTimers(lines: string[] = []): Promise<DemoSummary> {
  vi.useFakeTimers();
  return settle(runDemo({ write: (line) => lines.push(line), random: () => 0.5 }));
}

// Runs the fake clock until no timer is left; the demo must have finished by then.
async function settle<T>(run: Promise<T>): Promise<T> {
  let settled = false;
  const tracked = run.finally(() => {
    settled = true;
  });
  await vi.runAllTimersAsync();
  if (!settled) throw new Error('the demo was still running after its last timer fired');
  return tracked;
}

function row(summary: DemoSummary, tool: string): ToolRow {
  const found = summary.rows.find((candidate) => candidate.tool === tool);
  if (found === undefined) throw new Error(`no summary row for ${tool}`);
  return found;
}

describe('examples/harness-loop runDemo', () => {
  let summary: DemoSummary;
  const lines: string[] = [];

  beforeAll(async () => {
    summary = await runWithFakeTimers(lines);
    vi.useRealTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends in DONE through the on_budget_exceeded hook with the budget spent', () => {
    expect(summary.finalState).toBe('DONE');
    expect(summary.states[0]).toBe('IDLE');
    expect(summary.states.at(-1)).toBe('DONE');
    expect(summary.finalHook).toBe('on_budget_exceeded');
    expect(summary.budget).toEqual({ limit: 10, remaining: 0 });
    const last = summary.calls.at(-1);
    expect(last).toMatchObject({ ok: false, kind: 'budget_exceeded', hook: 'on_budget_exceeded' });
  });

  it('charges the order once although the model sent the charge twice', () => {
    expect(summary.charges).toBe(1);
    expect(row(summary, 'payments.charge')).toMatchObject({ calls: 2, ok: 2, attempts: 1, dedupeHits: 1 });
    const charges = summary.calls.filter((call) => call.tool === 'payments.charge');
    expect(charges.map((call) => call.attempts)).toEqual([1, 0]);
    expect(charges.every((call) => call.ok)).toBe(true);
  });

  it('retries the flaky search twice and then succeeds', () => {
    const search = row(summary, 'search.web');
    expect(search.retries).toBe(2);
    expect(search.timeouts).toBe(0);
    expect(summary.calls.find((call) => call.tool === 'search.web' && call.ok)).toMatchObject({
      attempts: 3,
      hook: 'none',
    });
  });

  it('does not retry the timed-out write, replans, and a later write succeeds', () => {
    expect(row(summary, 'db.write')).toMatchObject({ calls: 2, ok: 1, attempts: 2, retries: 0, timeouts: 1 });
    const writes = summary.calls.filter((call) => call.tool === 'db.write');
    expect(
      writes.map(({ ok, kind, attempts, hook, replan }) => ({ ok, kind, attempts, hook, replan })),
    ).toEqual([
      { ok: false, kind: 'timeout', attempts: 1, hook: 'on_error', replan: true },
      { ok: true, kind: undefined, attempts: 1, hook: 'none', replan: false },
    ]);
  });

  it('opens the circuit of the failing backend and then fails fast', () => {
    const inventory = row(summary, 'inventory.lookup');
    // The cooldown is far longer than the run, so it is still open, not half-open.
    expect(inventory.breaker).toBe('open');
    expect(inventory).toMatchObject({ attempts: 3, failures: { internal: 3, circuit_open: 1 } });
    expect(summary.calls.find((call) => call.kind === 'circuit_open')).toMatchObject({
      tool: 'inventory.lookup',
      attempts: 0,
      hook: 'on_error',
      replan: true,
    });
    for (const name of ['search.web', 'db.write', 'payments.charge']) {
      expect(row(summary, name).breaker).toBe('closed');
    }
  });

  it('reports the schema and not_found failures and replans after each', () => {
    expect(row(summary, 'search.web').failures.schema).toBe(1);
    expect(row(summary, 'files.delete')).toMatchObject({
      known: false,
      calls: 1,
      attempts: 0,
      failures: { not_found: 1 },
    });
    for (const kind of ['schema', 'not_found']) {
      expect(summary.calls.find((call) => call.kind === kind)).toMatchObject({
        attempts: 0,
        hook: 'on_error',
        replan: true,
      });
    }
  });

  it('prints what the model reads, without stack traces, and the summary table', () => {
    const text = lines.join('\n');
    expect(text).toContain('error (schema)');
    expect(text).toContain('error (not_found)');
    expect(text).toContain('error (timeout, after 1 attempt)');
    expect(text).not.toMatch(/\n\s+at \S+ \(/);
    expect(text).toMatch(/^tool\s+calls\s+ok\s+attempts\s+retries\s+timeouts\s+dedupe hits\s+breaker/m);
    // No colour when writing to a callback unless asked for.
    expect(text).not.toContain('\u001b[');
  });

  it('tells the same story at a smaller time scale', async () => {
    vi.useFakeTimers();
    const scaled = await settle(runDemo({ write: () => {}, timeScale: 0.01, random: () => 0 }));
    expect(scaled.rows).toEqual(summary.rows);
    expect(scaled.calls.map(({ tool, kind, attempts }) => ({ tool, kind, attempts }))).toEqual(
      summary.calls.map(({ tool, kind, attempts }) => ({ tool, kind, attempts })),
    );
  });
});

describe('examples/harness-loop as a script', () => {
  it('exits with code 0 and prints the summary table', async () => {
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      // A hang guard, not a timing check: the run takes a couple of seconds.
      execFile(
        process.execPath,
        ['--import', 'tsx', 'examples/harness-loop.ts'],
        { cwd: root, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
        (error, out, err) => {
          resolve({
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
            stdout: out,
            stderr: err,
          });
        },
      );
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^tool\s+calls\s+ok\s+attempts\s+retries\s+timeouts\s+dedupe hits\s+breaker/m);
    expect(stdout).toContain('real charges made by the payment backend: 1');
    expect(stdout).toContain('final state: DONE');
    expect(stdout).not.toContain('\u001b[');
  }, 35_000);
});
