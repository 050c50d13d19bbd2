// Property-based tests of the autopilot (issue 34, item 7): whatever the options and the tool's
// latencies, it never hedges or retries a timeout of a tool that is not safe to repeat, no knob
// leaves its floor or cap, a keyed call runs its handler under the idempotency rules with hedging
// on, and a tool that only fails keeps its static timeout. Fake timers; seeded runs.

import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AutopilotOptions, Outcome } from '../../index.js';
import { type ScriptedAttempt, scriptedTool } from '../helpers/scripted-tool.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const numRuns = process.env['FC_RUNS'] === undefined ? 25 : Number(process.env['FC_RUNS']);
const seed = 34;

/** One attempt of the tool: how long it takes, and how it ends. */
type Step = Required<Pick<ScriptedAttempt, 'ms' | 'ends'>>;

const step = fc.record({
  ms: fc.integer({ min: 0, max: 400 }),
  ends: fc.constantFrom<Step['ends']>('ok', 'ok', 'ok', 'transient', 'error'),
});

const pilotOptions = fc.record({
  mode: fc.constantFrom<'enforce' | 'shadow'>('enforce', 'shadow'),
  timeout: fc.record({
    quantile: fc.double({ min: 0.5, max: 0.999, noNaN: true }),
    factor: fc.double({ min: 1, max: 4, noNaN: true }),
    minMs: fc.integer({ min: 10, max: 200 }),
    minSamples: fc.integer({ min: 1, max: 10 }),
  }),
  hedge: fc.oneof(
    fc.constant<false>(false),
    fc.record({
      quantile: fc.double({ min: 0.1, max: 0.99, noNaN: true }),
      maxExtraLoad: fc.double({ min: 0, max: 1, noNaN: true }),
      minSamples: fc.integer({ min: 1, max: 10 }),
    }),
  ),
  concurrency: fc.oneof(
    fc.constant<false>(false),
    fc
      .tuple(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 8 }))
      .map(([min, extra]) => ({ min, max: min + extra })),
  ),
  retryBudget: fc.oneof(
    fc.constant<false>(false),
    fc.record({
      ratio: fc.double({ min: 0, max: 1, noNaN: true }),
      minPerSecond: fc.double({ min: 0, max: 20, noNaN: true }),
    }),
  ),
});

interface World {
  readonly idempotent: boolean;
  readonly readOnly: boolean;
  readonly toolTimeoutMs: number;
  readonly maxAttempts: number;
  readonly options: AutopilotOptions;
}

// The scripted tool playing `steps` in order (then quick successes), answering its count of successes.
function worldOf(world: World, steps: Step[]) {
  const fixture = scriptedTool({
    name: 'tool',
    timeoutMs: world.toolTimeoutMs,
    idempotent: world.idempotent,
    readOnly: world.readOnly,
    pilot: world.options,
    retry: { maxAttempts: world.maxAttempts, baseDelayMs: 5, random: () => 0.5 },
    fallback: () => ({ ms: 5, ends: 'ok' }),
    answer: (_attempt, served) => served,
  });
  const { dispatcher, script: queue } = fixture;
  queue.push(...steps);
  const call = async (options: { idempotencyKey?: string } = {}): Promise<Outcome> => {
    const pending = dispatcher.dispatch('tool', {}, options);
    await vi.advanceTimersByTimeAsync(world.toolTimeoutMs * world.maxAttempts * 3 + 1_000);
    return await pending;
  };
  return { ...fixture, handlerRuns: fixture.keys, call, queue };
}

const world = (idempotent: fc.Arbitrary<boolean>, readOnly: fc.Arbitrary<boolean>) =>
  fc.record({
    idempotent,
    readOnly,
    toolTimeoutMs: fc.integer({ min: 100, max: 2_000 }),
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    options: pilotOptions,
  });

describe('autopilot: safe by construction (properties)', () => {
  it('never hedges nor retries a timeout of a tool that is neither idempotent nor read-only', async () => {
    await fc.assert(
      fc.asyncProperty(
        world(fc.constant(false), fc.constant(false)),
        fc.array(step, { minLength: 0, maxLength: 15 }),
        async (given, warmUp) => {
          const { call, events, handlerRuns, queue } = worldOf(given, warmUp);
          for (let i = 0; i < warmUp.length; i++) await call();
          events.length = 0;
          const runsBefore = handlerRuns.length;
          // An attempt that never answers in time (only a timeout ends it); any other would succeed.
          queue.length = 0;
          queue.push({ ms: 1e9, ends: 'ok' });
          const outcome = await call();
          expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
          expect(handlerRuns.length - runsBefore).toBe(1);
          expect(events.filter((event) => event.type === 'dispatch.attempt')).toHaveLength(1);
          expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
          expect(outcome.ok === false && outcome.policy?.hedged).toBe(false);
        },
      ),
      { numRuns, seed },
    );
  });

  it('keeps every knob within its floor and cap', async () => {
    await fc.assert(
      fc.asyncProperty(
        world(fc.boolean(), fc.boolean()),
        fc.array(step, { minLength: 1, maxLength: 30 }),
        async (given, steps) => {
          const { call, pilot } = worldOf(given, steps);
          const { timeout, concurrency, retryBudget } = given.options as {
            timeout: { minMs: number };
            concurrency: { min: number; max: number } | false;
            retryBudget: { ratio: number; minPerSecond: number } | false;
          };
          let calls = 0;
          for (let i = 0; i < steps.length; i++) {
            const outcome = await call();
            calls++;
            const policy = outcome.policy;
            if (policy?.timeoutMs !== undefined) {
              expect(policy.timeoutMs).toBeLessThanOrEqual(given.toolTimeoutMs);
              if (!policy.source.startsWith('static'))
                expect(policy.timeoutMs).toBeGreaterThanOrEqual(timeout.minMs);
            }
            const snapshot = pilot.snapshot('tool');
            if (snapshot.timeoutMs !== undefined) {
              expect(snapshot.timeoutMs).toBeGreaterThanOrEqual(timeout.minMs);
              expect(snapshot.timeoutMs).toBeLessThanOrEqual(given.toolTimeoutMs);
            }
            if (concurrency === false) expect(snapshot.concurrency).toBeUndefined();
            else {
              expect(snapshot.concurrency).toBeGreaterThanOrEqual(concurrency.min);
              expect(snapshot.concurrency).toBeLessThanOrEqual(concurrency.max);
            }
            if (retryBudget !== false) {
              const balance = snapshot.retryBudget?.balance as number;
              // The reserve (minPerSecond over the 10 s ledger) plus what every call paid in.
              const ceiling = (retryBudget.minPerSecond * 10_000) / 1_000 + retryBudget.ratio * calls + 1e-6;
              expect(balance).toBeGreaterThanOrEqual(-1e-6);
              expect(balance).toBeLessThanOrEqual(ceiling);
            }
            if (snapshot.hedgeAfterMs !== undefined) expect(snapshot.hedgeAfterMs).toBeGreaterThanOrEqual(1);
          }
        },
      ),
      { numRuns, seed },
    );
  });

  it('runs a keyed call’s handler under the idempotency rules with hedging on', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 3, maxLength: 10 }),
        fc.integer({ min: 200, max: 1_500 }),
        async (idempotent, callers, warmUp, stragglerMs) => {
          const given: World = {
            idempotent,
            readOnly: false,
            toolTimeoutMs: 5_000,
            maxAttempts: 1,
            options: {
              timeout: false,
              retryBudget: false,
              hedge: { quantile: 0.5, maxExtraLoad: 1, minSamples: 1 },
            },
          };
          const steps: Step[] = warmUp.map((ms) => ({ ms, ends: 'ok' }));
          steps.push({ ms: stragglerMs, ends: 'ok' }, { ms: 10, ends: 'ok' });
          const { dispatcher, handlerRuns, events } = worldOf(given, steps);
          for (let i = 0; i < warmUp.length; i++) {
            const pending = dispatcher.dispatch('tool', {});
            await vi.advanceTimersByTimeAsync(60);
            expect((await pending).ok).toBe(true);
          }
          events.length = 0;
          const pending = Array.from({ length: callers }, () =>
            dispatcher.dispatch('tool', {}, { idempotencyKey: 'k-1' }),
          );
          await vi.advanceTimersByTimeAsync(stragglerMs + 100);
          const outcomes = await Promise.all(pending);
          const again = dispatcher.dispatch('tool', {}, { idempotencyKey: 'k-1' });
          await vi.advanceTimersByTimeAsync(100);
          outcomes.push(await again);
          const keyedRuns = handlerRuns.filter((key) => key === 'k-1').length;
          const attempts = events.filter((event) => event.type === 'dispatch.attempt').length;
          // One execution for the key, whoever called: its attempts are the handler's runs, and
          // every caller got its one result.
          expect(keyedRuns).toBe(attempts);
          expect(new Set(outcomes.map((outcome) => (outcome.ok ? outcome.result : 'failed'))).size).toBe(1);
          expect(outcomes[0]?.ok).toBe(true);
          // A hedge only for the tool that is safe to repeat; never two for one attempt.
          expect(keyedRuns).toBeLessThanOrEqual(idempotent ? 2 : 1);
        },
      ),
      { numRuns, seed },
    );
  });

  it('never shortens the timeout of a tool that only fails below minMs, nor at all', async () => {
    await fc.assert(
      fc.asyncProperty(
        world(fc.boolean(), fc.boolean()),
        fc.array(
          fc.record({
            ms: fc.integer({ min: 0, max: 300 }),
            ends: fc.constantFrom<Step['ends']>('transient', 'error'),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        async (given, steps) => {
          const { call, pilot } = worldOf(given, steps);
          const { timeout } = given.options as { timeout: { minMs: number } };
          for (let i = 0; i < steps.length; i++) {
            const outcome = await call();
            // A failure past the queue is a quick success: stop before the tool ever succeeds.
            if (outcome.ok) break;
            expect(outcome.policy?.timeoutMs ?? given.toolTimeoutMs).toBeGreaterThanOrEqual(
              Math.min(timeout.minMs, given.toolTimeoutMs),
            );
            expect(outcome.policy?.timeoutMs).toBe(given.toolTimeoutMs);
          }
          expect(pilot.snapshot('tool').timeoutMs).toBeUndefined();
        },
      ),
      { numRuns, seed },
    );
  });
});
