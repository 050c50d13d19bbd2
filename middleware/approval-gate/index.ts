/**
 * Approval gate: risky calls wait for a person; a token resumes them, once.
 * @module
 */

import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import { trusted } from '../../src/internal/trusted.js';
import { optionKeys, optionsObject, requireInteger, requireNumber } from '../kit.js';
import {
  ApprovalLoop,
  type ApprovalAction,
  type ApprovalDecision,
  type ApprovalVerdict,
  type GatePolicy,
  type ToolSource,
} from './gate.js';
import { memoryApprovalStore } from './memory-store.js';
import {
  decisionsOf,
  type ApproveOptions,
  type ApprovalDecidedEvent,
  type DenyOptions,
} from './decisions.js';
import type { Redactor } from '../../src/redact.js';
import type { ApprovalStore } from './store.js';
import type { ApprovalCall } from './tool-fields.js';
// Loaded for its effect: it declares `requiresApproval` to the registry.
import './tool-fields.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

export type { ApprovalAction, ApprovalDecision, ApprovalVerdict } from './gate.js';
export type { ApproveOptions, ApprovalDecidedEvent, DenyOptions } from './decisions.js';

/** Options for `approvalGate`. */
export interface ApprovalGateOptions {
  /** Where `evaluate` looks tools up (the dispatcher's registry). */
  registry?: ToolSource;
  /**
   * `enforce` pauses and refuses calls; `shadow` blocks nothing and only emits `approval.decision`
   * with `enforced: false`, to roll a policy out.
   * @default 'enforce'
   */
  mode?: 'enforce' | 'shadow';
  /**
   * The verdict for a tool with no override, no `requiresApproval` and no annotations.
   * @default 'require' (fail closed)
   */
  fallback?: ApprovalAction;
  /** Per-tool answers that beat the tool's own rule and its annotations: `true` requires approval. */
  overrides?: Readonly<Record<string, boolean>>;
  /**
   * Where requests and answers live; share one (Redis) across processes.
   * @default memoryApprovalStore()
   */
  store?: ApprovalStore;
  /**
   * How long a token lives, in milliseconds.
   * @default 3_600_000
   */
  ttlMs?: number;
  /**
   * The last word: gets the call (its `tool`, `toolName`, validated `args`, `callId`,
   * `idempotencyKey` and `tenant`) and the verdict of the other rules, returns a verdict. One that
   * throws pauses the call (fail closed).
   * @default undefined (the other rules decide)
   * @example
   * decide: (call, byDefault) => (call.tenant === 'internal' ? { action: 'allow' } : byDefault)
   */
  decide?: (call: ApprovalCall, byDefault: ApprovalVerdict) => ApprovalVerdict | Promise<ApprovalVerdict>;
  /**
   * The longest preview of a paused call's validated args kept with its request, in characters:
   * their JSON text, redacted before it reaches the store, then cut. 0 keeps none.
   * @default 2_000
   */
  previewChars?: number;
  /**
   * The redactor for what the gate stores (previews, reasons): default the dispatcher's
   * (`createDispatcher(stack, { redact })`), else the built-in patterns (`createRedactor()`).
   * Give the dispatcher's own here when it has patterns of yours: edited args approved outside a
   * dispatch see only this one.
   * @default the dispatcher's redactor, else createRedactor()
   */
  redact?: Redactor;
}

const approvalGateOptionKeys = optionKeys<ApprovalGateOptions>({
  registry: true,
  mode: true,
  fallback: true,
  overrides: true,
  store: true,
  ttlMs: true,
  decide: true,
  previewChars: true,
  redact: true,
});

/** Options for `gate.evaluate`. */
export interface EvaluateOptions {
  /** The call's id. */
  callId?: string;
  /** The call's idempotency key. */
  idempotencyKey?: string;
  /** Who the call is for, as the dispatch's `tenant` option would say. */
  tenant?: string;
}

/** The approval gate: a layer, and the reviewer's and host's side of it. */
export interface ApprovalGate extends Middleware {
  /** `enforce` or `shadow`. */
  readonly mode: 'enforce' | 'shadow';
  /** The decision the gate would make for a call, running nothing (needs `registry`). */
  evaluate(name: string, args: unknown, options?: EvaluateOptions): Promise<ApprovalDecision>;
  /** Where requests, answers and the audit log live: a console lists (`list`) and audits (`audit`) here. */
  readonly store: ApprovalStore;
  /**
   * Approves a pending token, as asked or, with `args`, edited then approved (see
   * `ApproveOptions.args`); `false` when unknown, expired, denied, or approved for other args.
   * Sent again the same way, `true` (and no second audit record).
   *
   * @throws a `schema` envelope (`DispatchError`) for edited args that fail the tool's schema.
   * @throws TypeError for `args` without a registry or on a store that takes no edits, a bad `channel` or an unknown option.
   * @example
   * await gate.approve(token, { by: 'ana', channel: 'console', args: { amount: 50 } });
   */
  approve(token: string, options?: ApproveOptions): Promise<boolean>;
  /** Denies a token for good; `false` when unknown, expired or already approved. */
  deny(token: string, reason?: string, options?: DenyOptions): Promise<boolean>;
  /**
   * Hears every decision (`approval.decided`) made anywhere the store reaches: through the store's
   * `subscribe` (a fleet, over Redis), else the decisions made through this gate. Returns the
   * unsubscribe function.
   *
   * @example
   * const stop = gate.subscribe((decided) => console.log(decided.token, decided.decision, decided.by));
   */
  subscribe(listener: (decided: ApprovalDecidedEvent) => void): () => void;
}

/**
 * Pauses risky calls for a person. Its rules, first answer wins: `decide`'s verdict (given the
 * others' as its default), else `overrides[tool]`, else the tool's `requiresApproval`, else its
 * annotations (approval unless `readOnlyHint: true` or `destructiveHint: false`), else
 * `fallback`. A paused call fails with `approval_required`, carrying `outcome.approval.token`;
 * `approve(token)` then `dispatch(..., { approval: token })` runs it once, under the call's
 * idempotency key or `approval:<token>`: the run is claimed and recorded in the store, and a
 * later delivery gets its outcome. Place it after schema validation and before the budget.
 *
 * @throws TypeError for a bad `mode`, `fallback`, `overrides`, `store`, `ttlMs` or `decide`.
 * @example
 * const gate = approvalGate({ registry, overrides: { 'fs.read': false } });
 * const dispatcher = createDispatcher(defaultStack({ registry, approvals: gate }));
 * const out = await dispatcher.dispatch('payments.refund', args, { idempotencyKey: 'r-7' });
 * if (!out.ok && out.approval) await gate.approve(out.approval.token, { by: 'ana' });
 */
export function approvalGate(options?: ApprovalGateOptions): ApprovalGate {
  const given = optionsObject('approvalGate', options, approvalGateOptionKeys);
  const policy = policyOf(given);
  const { registry } = given;
  if (registry !== undefined && typeof registry?.get !== 'function') {
    throw new TypeError('registry must have a get(name) method');
  }
  const loop = new ApprovalLoop(policy);
  const layer = trusted(function approvalGate(ctx: DispatchContext, next: Next): Promise<void> {
    return loop.run(ctx, next);
  });
  const enforced = policy.mode === 'enforce';
  const evaluate = async (
    name: string,
    args: unknown,
    at: EvaluateOptions = {},
  ): Promise<ApprovalDecision> => {
    if (registry === undefined) throw new TypeError('evaluate() needs the gate made with a registry');
    const tool = registry.get(name);
    if (tool === undefined) return { action: 'allow', source: 'registry', reason: 'no such tool', enforced };
    const parsed = await tool.inputSchema['~standard'].validate(args);
    if (parsed.issues !== undefined) {
      return {
        action: 'allow',
        source: 'schema',
        reason: 'the args are invalid; the call will not run',
        enforced,
      };
    }
    const call: ApprovalCall = {
      tool,
      toolName: tool.name,
      args: parsed.value,
      callId: at.callId ?? 'evaluate',
      idempotencyKey: at.idempotencyKey,
      tenant: at.tenant,
    };
    const { action, source, reason } = await loop.verdict(call);
    return reason === undefined ? { action, source, enforced } : { action, source, reason, enforced };
  };
  const { approve, deny, subscribe } = decisionsOf(policy, loop, registry);
  return Object.assign(layer, { mode: policy.mode, store: policy.store, evaluate, approve, deny, subscribe });
}

function policyOf(options: ApprovalGateOptions): GatePolicy {
  const {
    mode = 'enforce',
    fallback = 'require',
    overrides = {},
    store,
    ttlMs = 3_600_000,
    decide,
    previewChars = 2_000,
    redact,
  } = options;
  requireInteger('previewChars', previewChars, 0);
  if (redact !== undefined && typeof (redact as Partial<Redactor> | null)?.redactValue !== 'function') {
    throw new TypeError(`redact must be a redactor from createRedactor(), got ${String(redact)}`);
  }
  if (mode !== 'enforce' && mode !== 'shadow')
    throw new TypeError(`mode must be 'enforce' or 'shadow', got ${String(mode)}`);
  if (fallback !== 'require' && fallback !== 'allow' && fallback !== 'deny') {
    throw new TypeError(`fallback must be 'require', 'allow' or 'deny', got ${String(fallback)}`);
  }
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw new TypeError('overrides must be an object of tool names to booleans');
  }
  for (const [name, value] of Object.entries(overrides)) {
    if (typeof value !== 'boolean')
      throw new TypeError(`overrides["${name}"] must be a boolean, got ${String(value)}`);
  }
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true });
  if (decide !== undefined && typeof decide !== 'function') throw new TypeError('decide must be a function');
  if (
    store !== undefined &&
    (typeof store !== 'object' ||
      store === null ||
      ['open', 'get', 'answer'].some(
        (m) => typeof (store as unknown as Record<string, unknown>)[m] !== 'function',
      ))
  ) {
    throw new TypeError('store must be an ApprovalStore (open, get, answer), such as memoryApprovalStore()');
  }
  if (store !== undefined && (typeof store.redeem === 'function') !== (typeof store.settle === 'function')) {
    throw new TypeError('store must have both redeem and settle, or neither');
  }
  return {
    mode,
    fallback,
    overrides: new Map(Object.entries(overrides)),
    store: store ?? memoryApprovalStore(),
    ttlMs,
    decide,
    previewChars,
    redactor: redact,
  };
}
