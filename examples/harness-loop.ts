// A plan-execute harness loop driven by a scripted model, printing what the dispatcher does.
//
// Run it with `npx tsx examples/harness-loop.ts`. No network and no LLM: the "model" is a fixed
// script of plans, the tools are in-memory simulations (./simulated-tools.ts), and the timers
// are real but short, so the whole run takes about a second and a half.

import { pathToFileURL } from 'node:url';
import {
  circuitBreaker,
  createBudget,
  createDispatcher,
  defaultStack,
  harnessStep,
  logging,
  toToolMessage,
  type CircuitState,
  type DispatchCall,
  type HarnessHook,
  type Logger,
  type LogLevel,
  type LogRecord,
  type Outcome,
} from '../index.js';
import { createSimulatedTools, delay } from './simulated-tools.js';

/** The states of the harness loop. */
export type LoopState = 'IDLE' | 'PLANNING' | 'EXECUTING' | 'AWAITING_TOOL' | 'REFLECTING' | 'DONE';

/** Options for `runDemo`. */
export interface DemoOptions {
  /**
   * Where each line of the timeline and the summary goes.
   * @default console.log
   */
  write?: (line: string) => void;
  /**
   * Whether to colour the output with ANSI codes.
   * @default true when writing to a terminal (stdout is a TTY) and NO_COLOR is unset
   */
  color?: boolean;
  /**
   * Multiplies every latency, timeout, backoff and cooldown; the story is the same at any scale.
   * @default 1
   */
  timeScale?: number;
  /**
   * The retry layer's jitter source, returning a number in [0, 1).
   * @default Math.random
   */
  random?: () => number;
}

/** One tool's line of the summary table. */
export interface ToolRow {
  /** The tool name the model asked for. */
  tool: string;
  /** Whether the registry knows it. */
  known: boolean;
  /** Dispatches of it. */
  calls: number;
  /** Dispatches that succeeded. */
  ok: number;
  /** Handler attempts (a deduplicated or rejected call makes none). */
  attempts: number;
  /** Attempts the retry layer started again. */
  retries: number;
  /** Attempts that ran past their timeout. */
  timeouts: number;
  /** Calls answered by the idempotency layer without running the handler. */
  dedupeHits: number;
  /** Failed dispatches by kind. */
  failures: Record<string, number>;
  /** Its circuit at the end of the run. */
  breaker: CircuitState;
}

/** One dispatch as the loop saw it. */
export interface CallRecord {
  /** The model's tool-call id. */
  callId: string;
  /** The tool asked for. */
  tool: string;
  /** Whether it succeeded. */
  ok: boolean;
  /** The failure kind, if it failed. */
  kind: string | undefined;
  /** Handler attempts it made. */
  attempts: number;
  /** The hook `harnessStep` picked. */
  hook: HarnessHook;
  /** Whether `harnessStep` asked for a new plan. */
  replan: boolean;
  /** What the model read (`toToolMessage`). */
  message: string;
}

/** What `runDemo` returns. */
export interface DemoSummary {
  /** The per-tool table, registered tools first. */
  rows: ToolRow[];
  /** Every dispatch, in the order the loop reflected on them. */
  calls: CallRecord[];
  /** Charges the payment backend really made. */
  charges: number;
  /** The shared tool-call budget at the end. */
  budget: { limit: number; remaining: number };
  /** The hook that ended the run (`on_budget_exceeded`, or `none` if the script ran out). */
  finalHook: HarnessHook;
  /** Every state the loop went through, in order. */
  states: LoopState[];
  /** The last state. */
  finalState: 'DONE';
}

/** A tool call as the scripted model emits it. */
interface ScriptedCall {
  name: string;
  args: unknown;
  idempotencyKey?: string;
}

/** One step of a plan: a single call, or a batch the model emits in parallel. */
interface Step {
  calls: ScriptedCall[];
  parallel?: boolean;
}

/** What the model says it will do next. */
interface Plan {
  thought: string;
  steps: Step[];
}

const note = 'Harness loops: plan, call tools through one dispatcher, reflect on every outcome.';
const charge = { orderId: 'ord-42', amountCents: 3_900 };

// The model's plans, in order: the loop asks for the next one whenever an outcome calls for a
// replan (the rest of the current plan is dropped) or the current plan is finished.
const script: readonly Plan[] = [
  {
    thought: 'Task: research agent harness loops, pay order ord-42, check stock, save a note. Search first.',
    // A slip a real model makes: a number where the schema wants a string.
    steps: [{ calls: [{ name: 'search.web', args: { query: 42 } }] }],
  },
  {
    thought: 'Fix the query, and do the independent calls at once.',
    steps: [
      {
        parallel: true,
        calls: [
          { name: 'search.web', args: { query: 'agent harness loop' } },
          { name: 'inventory.lookup', args: { sku: 'BK-101' } },
          { name: 'inventory.lookup', args: { sku: 'BK-102' } },
          { name: 'payments.charge', args: charge, idempotencyKey: 'charge-ord-42' },
          // Another slip: the same charge twice in one batch. The key makes it harmless.
          { name: 'payments.charge', args: charge, idempotencyKey: 'charge-ord-42' },
        ],
      },
      // Never sent: the batch's failures make the loop replan first.
      { calls: [{ name: 'db.write', args: { id: 'note-1', text: note } }] },
    ],
  },
  {
    thought: 'Inventory failed twice; maybe a blip. Try BK-101 once more.',
    steps: [{ calls: [{ name: 'inventory.lookup', args: { sku: 'BK-101' } }] }],
  },
  {
    thought: 'Still failing. Try the last SKU, BK-103.',
    steps: [{ calls: [{ name: 'inventory.lookup', args: { sku: 'BK-103' } }] }],
  },
  {
    thought: 'Inventory is down; skip the stock check. Clean up the scratch file.',
    steps: [{ calls: [{ name: 'files.delete', args: { path: '/tmp/scratch.txt' } }] }],
  },
  {
    thought: 'There is no file tool. Save the note.',
    steps: [{ calls: [{ name: 'db.write', args: { id: 'note-1', text: note } }] }],
  },
  {
    thought:
      'The write timed out and may have committed; it is keyed by id, so writing again cannot duplicate it. Then dig deeper.',
    steps: [
      { calls: [{ name: 'db.write', args: { id: 'note-1', text: note } }] },
      { calls: [{ name: 'search.web', args: { query: 'harness loop budgets' } }] },
      { calls: [{ name: 'search.web', args: { query: 'harness loop reflection' } }] },
    ],
  },
];

// Sized for the script: the parallel batch takes 6 attempts (search 3, inventory 2, charge 1),
// the lone inventory lookup 1, the two writes 2, the first deeper search 1; the second one
// finds nothing left. Rejected, deduplicated and circuit-open calls cost nothing.
const budgetLimit = 10;
const maxAttempts = 3;

type Tone = 'state' | 'model' | 'read' | 'hook' | 'debug' | 'info' | 'warn' | 'error' | 'bold';

const ansi: Readonly<Record<Tone, string>> = {
  state: '\u001b[1;36m',
  model: '\u001b[35m',
  read: '\u001b[2;35m',
  hook: '\u001b[34m',
  debug: '\u001b[2m',
  info: '\u001b[32m',
  warn: '\u001b[33m',
  error: '\u001b[31m',
  bold: '\u001b[1m',
};

/**
 * Runs the scripted harness loop once against the simulated tools, writes the timeline and the
 * summary table, and resolves to the summary. Leaves no timer behind.
 *
 * @example
 * const summary = await runDemo({ write: () => {}, timeScale: 0.1 });
 * summary.charges; // 1
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoSummary> {
  const {
    write = (line: string) => console.log(line),
    color = options.write === undefined && process.stdout.isTTY === true && !process.env.NO_COLOR,
    timeScale = 1,
    random = Math.random,
  } = options;
  if (typeof timeScale !== 'number' || !(timeScale > 0) || !Number.isFinite(timeScale)) {
    throw new TypeError(`timeScale must be a finite number > 0, got ${String(timeScale)}`);
  }
  const ms = (value: number) => value * timeScale;
  const paint = (tone: Tone, text: string) => (color ? `${ansi[tone]}${text}\u001b[0m` : text);
  const startedAt = Date.now();
  const print = (source: string, text: string, tone?: Tone) => {
    const elapsed = `${String(Date.now() - startedAt).padStart(5)} ms`;
    const body = `${source.padEnd(26)} ${text}`;
    write(`${paint('debug', elapsed)}  ${tone === undefined ? body : paint(tone, body)}`);
  };

  const { registry, backends } = createSimulatedTools({ timeScale });
  const stats = new Map<string, Omit<ToolRow, 'tool' | 'known' | 'breaker'>>();
  const statsOf = (tool: string) => {
    let row = stats.get(tool);
    if (row === undefined) {
      row = { calls: 0, ok: 0, attempts: 0, retries: 0, timeouts: 0, dedupeHits: 0, failures: {} };
      stats.set(tool, row);
    }
    return row;
  };

  // The timeline comes from the logging middleware alone (no `onEvent` printer as well), so each
  // event is printed once; the same records feed the summary table.
  const record = (level: LogLevel, entry: LogRecord) => {
    const row = statsOf(entry.tool);
    switch (entry.event) {
      case 'dispatch.attempt':
        row.attempts += 1;
        break;
      case 'dispatch.retry':
        row.retries += 1;
        break;
      case 'dispatch.timeout':
        row.timeouts += 1;
        break;
      case 'idempotency.hit':
        row.dedupeHits += 1;
        break;
      case 'dispatch.success':
        row.calls += 1;
        row.ok += 1;
        break;
      case 'dispatch.failure': {
        row.calls += 1;
        const kind = entry.kind ?? 'unknown';
        row.failures[kind] = (row.failures[kind] ?? 0) + 1;
        break;
      }
    }
    print(`${entry.callId} ${entry.tool}`, describeRecord(entry), level);
  };
  const logger: Logger = {
    debug: (entry) => record('debug', entry),
    info: (entry) => record('info', entry),
    warn: (entry) => record('warn', entry),
    error: (entry) => record('error', entry),
  };

  // Where the breaker sits: inside idempotency, so a charge already made is still served from
  // the cache (or shared in flight) while a backend's circuit is open, and so those answers,
  // which run no handler, never count for or against a circuit; before concurrencyLimit, so a
  // call to a broken backend fails at once instead of queueing for a slot that healthy tools
  // need; outside retry, so a call is admitted once and every attempt it makes still counts
  // (the breaker hears each `dispatch.retry`). It also sits after the schema and budget checks,
  // whose rejections are the caller's fault, not the backend's.
  const breaker = circuitBreaker({
    failureThreshold: 3,
    windowMs: ms(60_000),
    // Far longer than the run, so the circuit is still open at the end and the summary says so.
    cooldownMs: ms(30_000),
  });
  const layers = defaultStack({
    registry,
    // Three slots, so one call of the five-call batch visibly queues.
    concurrency: { max: 3 },
    retry: { maxAttempts, baseDelayMs: ms(50), random },
    timeout: { defaultMs: ms(400) },
  });
  // Every layer is a named function, so the stack can be edited by name.
  const slot = layers.findIndex((layer) => layer.name === 'concurrencyLimit');
  if (slot === -1) throw new Error('defaultStack() has no concurrencyLimit layer');
  layers.splice(slot, 0, breaker);
  // Logging outermost: it sees every event of every call, the final success or failure included.
  const stack = [logging({ logger }), ...layers];
  const dispatcher = createDispatcher(stack);
  const budget = createBudget(budgetLimit);

  const states: LoopState[] = ['IDLE'];
  // Widened on purpose: `go` changes it from a closure, which narrowing cannot see.
  let state = 'IDLE' as LoopState;
  const go = (next: LoopState, why?: string) => {
    print('loop', `${state} → ${next}${why === undefined ? '' : `  (${why})`}`, 'state');
    state = next;
    states.push(next);
  };

  write(paint('bold', 'tool-dispatcher: a plan-execute harness loop with a scripted model'));
  write(
    `tools offered to the model: ${registry
      .list()
      .map((tool) => tool.name)
      .join(', ')}`,
  );
  write(`stack, outermost first: ${stack.map((layer) => layer.name).join(' → ')}`);
  write(
    `shared budget: ${budgetLimit} handler attempts for the whole run; retries: ${maxAttempts} attempts at most`,
  );
  write('');

  const calls: CallRecord[] = [];
  let plans = 0;
  let plan: Plan | undefined;
  let stepIndex = 0;
  let toolCalls = 0;
  let finalHook: HarnessHook = 'none';

  go('PLANNING', 'the model receives the task');
  while (state !== 'DONE') {
    if (state === 'PLANNING') {
      // The model "thinks" for a moment, then returns its next plan.
      await delay(ms(80));
      plan = script[plans++];
      if (plan === undefined) {
        print('model', 'No more ideas: writing the final answer.', 'model');
        go('DONE', 'the script ran out');
        break;
      }
      print('model', `plan ${plans}: ${plan.thought}`, 'model');
      stepIndex = 0;
      go('EXECUTING');
      continue;
    }

    const step = plan?.steps[stepIndex];
    if (step === undefined) {
      go('PLANNING', 'plan finished');
      continue;
    }
    const batch: DispatchCall[] = step.calls.map((call) => {
      const callId = `tc${String(++toolCalls).padStart(2, '0')}`;
      const key = call.idempotencyKey === undefined ? '' : `  key=${call.idempotencyKey}`;
      print('loop', `send ${callId} ${call.name} ${JSON.stringify(call.args)}${key}`);
      return {
        name: call.name,
        args: call.args,
        options: {
          callId,
          budget,
          ...(call.idempotencyKey === undefined ? {} : { idempotencyKey: call.idempotencyKey }),
        },
      };
    });
    go(
      'AWAITING_TOOL',
      step.parallel === true ? `${batch.length} calls in parallel via gatherBounded` : undefined,
    );
    const outcomes: Outcome[] =
      step.parallel === true
        ? await dispatcher.gatherBounded(batch)
        : [await dispatcher.dispatch(batch[0]?.name ?? '', batch[0]?.args, batch[0]?.options)];

    go('REFLECTING');
    let replan = false;
    let budgetSpent = false;
    outcomes.forEach((outcome, index) => {
      const call = batch[index];
      const callId = call?.options?.callId ?? '?';
      const tool = call?.name ?? '?';
      // A tool that is not idempotent gets one attempt at a timeout: it is never retried.
      const attemptsPossible =
        !outcome.ok && outcome.kind === 'timeout' && registry.get(tool)?.idempotent !== true
          ? 1
          : maxAttempts;
      const next = harnessStep(outcome, { maxAttempts: attemptsPossible });
      const message = toToolMessage(outcome, { maxLength: 240 });
      print(`${callId} → model`, message, 'read');
      calls.push({
        callId,
        tool,
        ok: outcome.ok,
        kind: outcome.ok ? undefined : outcome.kind,
        attempts: outcome.attempts,
        hook: next.hook,
        replan: next.replan,
        message,
      });
      if (next.hook === 'on_error') {
        print(
          'loop',
          `hook on_error(${callId} ${tool}: ${outcome.ok ? '' : outcome.kind})${next.replan ? ' → replan' : ''}`,
          'hook',
        );
      }
      if (next.hook === 'on_budget_exceeded') budgetSpent = true;
      replan ||= next.replan;
    });

    if (budgetSpent) {
      finalHook = 'on_budget_exceeded';
      print(
        'loop',
        `hook on_budget_exceeded: ${budget.limit} of ${budget.limit} attempts used; stop calling tools`,
        'hook',
      );
      print(
        'model',
        'Final answer from what I have: 2 searches, order ord-42 charged once, note-1 saved, stock unknown (inventory down).',
        'model',
      );
      go('DONE', 'on_budget_exceeded');
    } else if (replan) {
      go('PLANNING', 'replan');
    } else {
      stepIndex += 1;
      go('EXECUTING', 'next step');
    }
  }

  const known = registry.list().map((tool) => tool.name);
  const names = [...known, ...[...stats.keys()].filter((name) => !known.includes(name))];
  const rows: ToolRow[] = names.map((tool) => ({
    tool,
    known: known.includes(tool),
    ...(stats.get(tool) ?? {
      calls: 0,
      ok: 0,
      attempts: 0,
      retries: 0,
      timeouts: 0,
      dedupeHits: 0,
      failures: {},
    }),
    breaker: breaker.state(tool),
  }));

  write('');
  for (const line of renderTable(rows)) write(line);
  write('');
  write(
    `real charges made by the payment backend: ${backends.charges} (the model sent payments.charge ${statsOf('payments.charge').calls} times)`,
  );
  write(
    `budget: ${budget.limit - budget.remaining} of ${budget.limit} attempts used; final hook: ${finalHook}; final state: ${state}`,
  );

  return {
    rows,
    calls,
    charges: backends.charges,
    budget: { limit: budget.limit, remaining: budget.remaining },
    finalHook,
    states,
    finalState: 'DONE',
  };
}

// Why a failure ended as it did, for a reader new to the library.
function failureNote(kind: string, attempts: number): string | undefined {
  switch (kind) {
    case 'schema':
      return 'args rejected before any attempt';
    case 'not_found':
      return 'no such tool in the registry';
    case 'internal':
      return 'a plain error: never retried';
    case 'timeout':
      return attempts >= maxAttempts
        ? 'retries ran out'
        : 'not idempotent: a timed-out call may have committed, so never retried';
    case 'transient':
      return attempts >= maxAttempts ? 'retries ran out' : undefined;
    case 'circuit_open':
      return 'failed fast: the handler was not called';
    case 'budget_exceeded':
      return 'the shared budget has no attempt left';
    default:
      return undefined;
  }
}

/** One readable line for a log record of the dispatcher. */
function describeRecord(entry: LogRecord): string {
  const attempts = (count: number) => `${count} attempt${count === 1 ? '' : 's'}`;
  switch (entry.event) {
    case 'dispatch.attempt':
      return `attempt ${entry.attempt} starts`;
    case 'dispatch.retry':
      return `attempt ${entry.attempt} failed (${entry.kind ?? '?'}); retry in ${Math.round(Number(entry.delayMs))} ms`;
    case 'dispatch.timeout':
      return `attempt ${entry.attempt} timed out after ${Math.round(Number(entry.timeoutMs))} ms; its signal is aborted`;
    case 'dispatch.success':
      return Number(entry.attempts) === 0
        ? `ok with another call's result, handler not run (${Math.round(entry.durationMs)} ms)`
        : `ok after ${attempts(Number(entry.attempts))} (${Math.round(entry.durationMs)} ms)`;
    case 'dispatch.failure': {
      const why = failureNote(entry.kind ?? '', Number(entry.attempts));
      return `failed: ${entry.kind ?? '?'} after ${attempts(Number(entry.attempts))}${why === undefined ? '' : ` (${why})`}`;
    }
    case 'idempotency.hit':
      return `dedupe hit on key ${String(entry.key)} (${entry.source === 'cache' ? 'cached success' : 'shares the call in flight'}); handler not run`;
    case 'concurrency.queued':
      return `waits for a concurrency slot (max ${String(entry.max)})`;
    case 'circuit.open':
      return `circuit OPEN after ${String(entry.failures)} failures: calls fail fast for ${Math.round(Number(entry.cooldownMs))} ms`;
    case 'circuit.half_open':
      return 'circuit half-open: the next call is a probe';
    case 'circuit.close':
      return 'circuit closed again';
    default:
      return entry.event;
  }
}

/** The summary table as lines of text. */
function renderTable(rows: readonly ToolRow[]): string[] {
  const header = [
    'tool',
    'calls',
    'ok',
    'attempts',
    'retries',
    'timeouts',
    'dedupe hits',
    'breaker',
    'failures',
  ];
  const body = rows.map((row) => [
    row.known ? row.tool : `${row.tool} (unknown)`,
    String(row.calls),
    String(row.ok),
    String(row.attempts),
    String(row.retries),
    String(row.timeouts),
    String(row.dedupeHits),
    row.known ? row.breaker : '-',
    Object.entries(row.failures)
      .map(([kind, count]) => `${kind}×${count}`)
      .join(', ') || '-',
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...body.map((cells) => (cells[column] ?? '').length)),
  );
  // Text columns align left, counts right.
  const numeric = (column: number) => column >= 1 && column <= 6;
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return numeric(column) ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [format(header), widths.map((width) => '-'.repeat(width)).join('  '), ...body.map(format)];
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  runDemo().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
