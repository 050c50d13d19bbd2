// Model-based test: the circuit breaker against a small reference state machine, under random calls, probes, aborts and time.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  DispatchError,
  errorMapping,
  isCircuitFailure,
  schemaValidation,
  toolLookup,
  ToolRegistry,
  TransientError,
  type Outcome,
} from '../../index.js';

// ---------------------------------------------------------------------------------------------
// The reference: the contract of middleware/circuit-breaker.ts as plain state.

type State = 'closed' | 'open' | 'half_open';
/** What a call's handler does; `bad-args` never reaches it, `cancelled` is the caller giving up. */
type Result = 'ok' | 'transient' | 'internal' | 'bad-args' | 'cancelled';

interface Config {
  failureThreshold: number;
  windowMs: number;
  cooldownMs: number;
  halfOpenMaxCalls: number;
  /** Count only `transient` (a custom isFailure) instead of the default kinds. */
  transientOnly: boolean;
}

interface ModelCircuit {
  state: State;
  failures: number[];
  openedAt: number;
  trial: number;
}

type Admission =
  | { admitted: true; trial: number | undefined }
  | { admitted: false; retryAfterMs: number | undefined };

class Model {
  now = 0;
  readonly circuits = new Map<string, ModelCircuit>();
  readonly probes = new Map<number, number>();
  trials = 0;
  readonly pending: Array<{ id: string; key: string; result: Result; trial: number | undefined }> = [];

  constructor(readonly config: Config) {}

  reported(key: string): State {
    const circuit = this.circuits.get(key);
    if (circuit === undefined || circuit.state === 'closed') return 'closed';
    if (circuit.state === 'open' && this.now - circuit.openedAt < this.config.cooldownMs) return 'open';
    return 'half_open';
  }

  admit(key: string): Admission {
    const circuit = this.circuits.get(key);
    if (circuit === undefined || circuit.state === 'closed') return { admitted: true, trial: undefined };
    if (circuit.state === 'open') {
      const remaining = circuit.openedAt + this.config.cooldownMs - this.now;
      if (remaining > 0) {
        return { admitted: false, retryAfterMs: Math.min(remaining, this.config.cooldownMs) };
      }
      circuit.state = 'half_open';
      circuit.trial = ++this.trials;
      this.probes.set(circuit.trial, 0);
    }
    const running = this.probes.get(circuit.trial) ?? 0;
    if (running >= this.config.halfOpenMaxCalls) return { admitted: false, retryAfterMs: undefined };
    this.probes.set(circuit.trial, running + 1);
    return { admitted: true, trial: circuit.trial };
  }

  finish(key: string, result: Result, trial: number | undefined): void {
    if (trial !== undefined) this.probes.set(trial, (this.probes.get(trial) ?? 0) - 1);
    if (result === 'bad-args') return; // no attempt ran
    if (result === 'ok') {
      const circuit = this.circuits.get(key);
      if (circuit === undefined) return;
      if (circuit.state === 'closed') this.circuits.delete(key);
      else if (circuit.state === 'half_open' && trial === circuit.trial) this.circuits.delete(key);
      return;
    }
    const counted = result === 'transient' || (result === 'internal' && !this.config.transientOnly);
    if (!counted) return;
    let circuit = this.circuits.get(key);
    if (circuit === undefined) {
      circuit = { state: 'closed', failures: [], openedAt: 0, trial: 0 };
      this.circuits.set(key, circuit);
    }
    if (circuit.state === 'closed') {
      circuit.failures.push(this.now);
      while (this.now - (circuit.failures[0] as number) > this.config.windowMs) circuit.failures.shift();
      if (circuit.failures.length >= this.config.failureThreshold) {
        circuit.state = 'open';
        circuit.openedAt = this.now;
      }
    } else if (circuit.state === 'half_open' && trial === circuit.trial) {
      circuit.failures = [this.now];
      circuit.state = 'open';
      circuit.openedAt = this.now;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The real thing: a dispatcher whose handlers do what each call's plan says.

const tools = ['svc.alpha', 'svc.beta'] as const;

interface Pending {
  settle: () => void;
  abort: () => void;
  outcome: Promise<Outcome>;
}

class Real {
  now = 0;
  calls = 0;
  readonly entered = new Set<string>();
  readonly plans = new Map<string, { result: Result; gate?: Promise<void> }>();
  readonly pending = new Map<string, Pending>();
  readonly breaker: ReturnType<typeof circuitBreaker>;
  readonly dispatcher: ReturnType<typeof createDispatcher>;

  constructor(config: Config) {
    this.breaker = circuitBreaker({
      failureThreshold: config.failureThreshold,
      windowMs: config.windowMs,
      cooldownMs: config.cooldownMs,
      halfOpenMaxCalls: config.halfOpenMaxCalls,
      ...(config.transientOnly ? { isFailure: (error: DispatchError) => error.kind === 'transient' } : {}),
      clock: { now: () => this.now },
    });
    const registry = new ToolRegistry();
    for (const name of tools) {
      registry.register({
        name,
        inputSchema: z.object({ n: z.number() }),
        handler: async (_args, ctx) => {
          this.entered.add(ctx.callId);
          const plan = this.plans.get(ctx.callId);
          await plan?.gate;
          if (plan?.result === 'transient') throw new TransientError('backend busy');
          if (plan?.result === 'internal') throw new Error('backend broke');
          return 'fine';
        },
      });
    }
    // Breaker before schema validation, so calls with bad args pass through it without an attempt.
    this.dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      this.breaker,
      schemaValidation(),
    ]);
  }

  begin(key: string, result: Result, gated: boolean): { id: string; outcome: Promise<Outcome> } {
    const id = `c${++this.calls}`;
    let open = () => {};
    const gate = gated ? new Promise<void>((resolve) => (open = resolve)) : undefined;
    this.plans.set(id, gate === undefined ? { result } : { result, gate });
    const controller = new AbortController();
    const outcome = this.dispatcher.dispatch(key, result === 'bad-args' ? { n: 'x' } : { n: 1 }, {
      callId: id,
      signal: controller.signal,
    });
    if (gated) {
      this.pending.set(id, { settle: open, abort: () => controller.abort(), outcome });
    }
    return { id, outcome };
  }
}

const expectedKind = (result: Result): string =>
  result === 'ok' ? 'ok' : result === 'bad-args' ? 'schema' : result;

async function expectAdmission(
  real: Real,
  admission: Admission,
  id: string,
  outcome: Promise<Outcome>,
): Promise<void> {
  if (admission.admitted) return;
  const turnedAway = await outcome;
  expect(turnedAway.ok ? 'ok' : turnedAway.kind, `call ${id} should be turned away`).toBe('circuit_open');
  expect(turnedAway.ok ? undefined : turnedAway.retryAfterMs).toBe(admission.retryAfterMs);
  expect(real.entered.has(id), `call ${id} reached its handler through an open circuit`).toBe(false);
}

function expectStates(model: Model, real: Real): void {
  for (const key of tools) expect(real.breaker.state(key), `state of ${key}`).toBe(model.reported(key));
}

// ---------------------------------------------------------------------------------------------
// Commands.

type Command = fc.AsyncCommand<Model, Real>;

/** A call that completes at once. */
class CallCommand implements Command {
  constructor(
    readonly tool: number,
    readonly result: Exclude<Result, 'cancelled'>,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const key = tools[this.tool] as string;
    const admission = model.admit(key);
    const { id, outcome } = real.begin(key, this.result, false);
    if (!admission.admitted) return expectAdmission(real, admission, id, outcome);
    const settled = await outcome;
    expect(settled.ok ? 'ok' : settled.kind).toBe(expectedKind(this.result));
    model.finish(key, this.result, admission.trial);
    expectStates(model, real);
  }
  toString = () => `call(${tools[this.tool]}, ${this.result})`;
}

/** A call that stays in flight until a Finish or Cancel. */
class BeginCommand implements Command {
  constructor(
    readonly tool: number,
    readonly result: Exclude<Result, 'cancelled' | 'bad-args'>,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const key = tools[this.tool] as string;
    const admission = model.admit(key);
    const { id, outcome } = real.begin(key, this.result, true);
    if (!admission.admitted) {
      real.pending.delete(id);
      return expectAdmission(real, admission, id, outcome);
    }
    model.pending.push({ id, key, result: this.result, trial: admission.trial });
    expectStates(model, real);
  }
  toString = () => `begin(${tools[this.tool]}, ${this.result})`;
}

/** Lets one in-flight call finish as planned, or makes its caller abort. */
class EndCommand implements Command {
  constructor(
    readonly index: number,
    readonly cancel: boolean,
  ) {}
  check = (model: Readonly<Model>) => model.pending.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const [call] = model.pending.splice(this.index % model.pending.length, 1);
    if (call === undefined) return;
    const pending = real.pending.get(call.id) as Pending;
    real.pending.delete(call.id);
    if (this.cancel) pending.abort();
    else pending.settle();
    const settled = await pending.outcome;
    const result: Result = this.cancel ? 'cancelled' : call.result;
    expect(settled.ok ? 'ok' : settled.kind, `outcome of ${call.id}`).toBe(expectedKind(result));
    model.finish(call.key, result, call.trial);
    expectStates(model, real);
  }
  toString = () => `${this.cancel ? 'cancel' : 'finish'}(#${this.index})`;
}

class AdvanceCommand implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    model.now += this.ms;
    real.now += this.ms;
    expectStates(model, real);
  }
  toString = () => `advance(${this.ms})`;
}

const configArb: fc.Arbitrary<Config> = fc.record({
  failureThreshold: fc.integer({ min: 1, max: 3 }),
  windowMs: fc.constantFrom(10, 100, Infinity),
  cooldownMs: fc.constantFrom(20, 50),
  halfOpenMaxCalls: fc.integer({ min: 1, max: 2 }),
  transientOnly: fc.boolean(),
});

const toolArb = fc.integer({ min: 0, max: tools.length - 1 });
const commandsArb = fc.commands(
  [
    fc
      .tuple(
        toolArb,
        fc.constantFrom<Exclude<Result, 'cancelled'>>('ok', 'transient', 'transient', 'internal', 'bad-args'),
      )
      .map(([tool, result]) => new CallCommand(tool, result)),
    fc
      .tuple(
        toolArb,
        fc.constantFrom<Exclude<Result, 'cancelled' | 'bad-args'>>('ok', 'transient', 'internal'),
      )
      .map(([tool, result]) => new BeginCommand(tool, result)),
    fc.tuple(fc.nat(), fc.boolean()).map(([index, cancel]) => new EndCommand(index, cancel)),
    fc.constantFrom(1, 5, 9, 20, 30, 60).map((ms) => new AdvanceCommand(ms)),
  ],
  { maxCommands: 60, size: 'max' },
);

const seed = process.env['FC_SEED'] === undefined ? 20_261_129 : Number(process.env['FC_SEED']);
const numRuns = process.env['FC_RUNS'] === undefined ? 150 : Number(process.env['FC_RUNS']);

describe('circuit breaker against a reference state machine', () => {
  it('agrees with the model on every admission, outcome and state', async () => {
    await fc.assert(
      fc.asyncProperty(configArb, commandsArb, async (config, commands) => {
        await fc.asyncModelRun(() => ({ model: new Model(config), real: new Real(config) }), commands);
      }),
      { numRuns, seed },
    );
  });

  it('keeps the default failure kinds: timeout, transient and internal count, caller errors do not', () => {
    for (const kind of ['timeout', 'transient', 'internal']) {
      expect(isCircuitFailure(new DispatchError(kind, kind))).toBe(true);
    }
    for (const kind of [
      'schema',
      'not_found',
      'budget_exceeded',
      'cancelled',
      'idempotency_conflict',
      'circuit_open',
    ]) {
      expect(isCircuitFailure(new DispatchError(kind, kind))).toBe(false);
    }
  });
});
