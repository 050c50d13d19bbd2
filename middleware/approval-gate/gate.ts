/**
 * The approval gate's decision loop: the rule order, then enforcement (tokens, host approvals,
 * shadow mode) over an approval store.
 * @module
 */

import { randomBytes } from 'node:crypto';
import { DispatchError } from '../../src/errors.js';
import type { ApprovalTicket } from '../../src/errors.js';
import type { DispatchContext, DispatchOptions, Next, Tool } from '../../src/types.js';
import type { ApprovalCall } from './tool-fields.js';
import { hostDenialOf } from '../internal-kit.js';
import { fingerprint } from '../kit.js';
import { isRedeemingStore, Redemption, TokenRuns, approvalStoreFailed } from './redemption.js';
import type { ApprovalRecord, ApprovalRequest, ApprovalStore } from './store.js';
import { createRedactor, type Redactor } from '../../src/redact.js';
import { previewOf } from './preview.js';

/** What a rule decides for a call. */
export type ApprovalAction = 'allow' | 'deny' | 'require';

/** A verdict: the action and, for `deny` and `require`, why. */
export interface ApprovalVerdict {
  /** Run it, refuse it, or ask a person first. */
  readonly action: ApprovalAction;
  /** Why, in words a model and a reviewer may read. */
  readonly reason?: string;
}

/** The gate's decision on a call: the verdict and the rule it came from. */
export interface ApprovalDecision extends ApprovalVerdict {
  /** Which rule decided: `decide`, `override`, `tool`, `annotations`, `fallback`, `token` or `host`. */
  readonly source: string;
  /** `false` in shadow mode, where nothing is blocked. */
  readonly enforced: boolean;
}

/** The gate's policy, checked when the gate is made. */
export interface GatePolicy {
  readonly mode: 'enforce' | 'shadow';
  readonly fallback: ApprovalAction;
  readonly overrides: ReadonlyMap<string, boolean>;
  readonly store: ApprovalStore;
  readonly ttlMs: number;
  /** The longest preview of the args kept with a request; 0 keeps none. */
  readonly previewChars: number;
  /** The gate's own redactor, if given: else the dispatcher's, else the built-in patterns. */
  readonly redactor: Redactor | undefined;
  readonly decide:
    | ((call: ApprovalCall, byDefault: ApprovalVerdict) => ApprovalVerdict | Promise<ApprovalVerdict>)
    | undefined;
}

type Sourced = ApprovalVerdict & { readonly source: string };
/** Through (`undefined`), refused (an envelope), or through the run of an approved token. */
type Checked = DispatchError | Redemption | undefined;

// Frozen: the verdicts that let a call through are shared by every call.
const allowedBy = (source: string): Sourced => Object.freeze({ action: 'allow', source });
const allowOverride = allowedBy('override');
const allowTool = allowedBy('tool');
const allowAnnotations = allowedBy('annotations');
const allowFallback = allowedBy('fallback');
const actions = new Set<string>(['allow', 'deny', 'require']);

/** The gate's loop: judges each call, then lets it through, refuses it or pauses it. */
export class ApprovalLoop {
  // Where approved tokens' runs are claimed and recorded; without it, the idempotency layer's
  // memory of the outcome is all that keeps a token from running twice.
  private readonly runs: TokenRuns | undefined;

  constructor(private readonly policy: GatePolicy) {
    this.runs = isRedeemingStore(policy.store) ? new TokenRuns(policy.store) : undefined;
  }

  /** The layer: checks the call, then runs it, refuses it, or runs it once on its approved token. */
  async run(ctx: DispatchContext, next: Next): Promise<void> {
    const checked = await this.check(ctx);
    if (checked === undefined) return next();
    // A redemption is made only over a store that records runs.
    if (checked instanceof Redemption) return (this.runs as TokenRuns).run(ctx, next, checked);
    throw checked;
  }

  /** The verdict of the rules for `call`. */
  async verdict(call: ApprovalCall): Promise<Sourced> {
    const byDefault = await this.byDefault(call);
    return this.policy.decide === undefined ? byDefault : this.decided(call, byDefault);
  }

  /** Checks a call in a dispatch: `undefined` lets it through, an envelope ends it. */
  async check(ctx: DispatchContext): Promise<Checked> {
    const { tool } = ctx;
    if (tool === undefined)
      return new DispatchError('internal', 'approvalGate() must sit inside toolLookup()');
    // A person refused it in the host: whatever the rules say now (and in shadow mode too).
    const refused = hostDenialOf(ctx);
    if (refused !== undefined) {
      const { approval } = ctx.options as { approval: { deniedBy: string; reason?: string } };
      const reason = approval.reason ?? `denied by ${approval.deniedBy}`;
      emitDecision(ctx, { action: 'deny', source: 'host', reason }, true);
      return refused;
    }
    const call: ApprovalCall = {
      tool,
      toolName: tool.name,
      args: ctx.args,
      callId: ctx.callId,
      idempotencyKey: ctx.options.idempotencyKey,
      tenant: ctx.options.tenant,
    };
    const verdict = await this.verdict(call);
    if (this.policy.mode === 'shadow' || verdict.action === 'allow') {
      emitDecision(ctx, verdict, this.policy.mode === 'enforce');
      return undefined;
    }
    if (verdict.action === 'deny') {
      emitDecision(ctx, verdict, true);
      return denied(ctx, verdict.reason ?? 'the policy denies it');
    }
    const { approval } = ctx.options;
    if (typeof approval === 'object' && 'approvedBy' in approval) {
      emitDecision(
        ctx,
        { action: 'allow', source: 'host', reason: `approved by ${approval.approvedBy}` },
        true,
      );
      return undefined;
    }
    const print = printOf(call);
    if (typeof approval === 'string') return this.redeem(ctx, call, verdict, print, approval);
    return this.request(ctx, call, verdict, print);
  }

  /** The redactor previews pass: the gate's own, else the dispatcher's, else the built-in patterns. */
  redactorFor(ctx?: DispatchContext): Redactor {
    return this.policy.redactor ?? ctx?.redactor ?? builtinRedactor();
  }

  private byDefault(call: ApprovalCall): Sourced | Promise<Sourced> {
    const { tool } = call;
    const override = this.policy.overrides.get(tool.name);
    if (override !== undefined)
      return override ? required('override', 'it is listed as needing approval') : allowOverride;
    const rule = tool.requiresApproval;
    if (rule === false) return allowTool;
    if (rule === true) return required('tool', 'the tool always needs approval');
    if (typeof rule === 'function') return ruleVerdict(rule, call);
    const hints = tool.annotations;
    if (hints !== undefined) {
      if (hints.readOnlyHint === true || hints.destructiveHint === false) return allowAnnotations;
      return required('annotations', 'its annotations say it may change or destroy data');
    }
    const { fallback } = this.policy;
    if (fallback === 'allow') return allowFallback;
    return { action: fallback, source: 'fallback', reason: 'the tool declares no approval rule' };
  }

  // The policy's own verdict; one that fails or answers nonsense pauses the call (fail closed).
  private async decided(call: ApprovalCall, byDefault: Sourced): Promise<Sourced> {
    let given: unknown;
    try {
      given = await (this.policy.decide as NonNullable<GatePolicy['decide']>)(call, byDefault);
    } catch {
      return required('decide', 'the approval policy failed');
    }
    if (given === byDefault) return byDefault;
    const action = (given as ApprovalVerdict | null)?.action;
    if (typeof action !== 'string' || !actions.has(action))
      return required('decide', 'the approval policy failed');
    const reason = (given as ApprovalVerdict).reason;
    return typeof reason === 'string' ? { action, source: 'decide', reason } : { action, source: 'decide' };
  }

  private async redeem(
    ctx: DispatchContext,
    call: ApprovalCall,
    verdict: Sourced,
    print: string,
    token: string,
  ): Promise<Checked> {
    let record: ApprovalRecord | undefined;
    try {
      record = await this.policy.store.get(token);
    } catch (error) {
      return approvalStoreFailed(error);
    }
    if (record === undefined) return this.request(ctx, call, verdict, print);
    if (
      record.tool !== call.tool.name ||
      record.fingerprint !== print ||
      record.key !== (call.idempotencyKey ?? null)
    ) {
      if (record.editedFrom === print && record.status === 'approved') {
        emitDecision(
          ctx,
          { action: 'deny', source: 'token', reason: 'a reviewer approved edited args instead' },
          true,
        );
        return new DispatchError(
          'idempotency_conflict',
          `A reviewer approved edited args instead of these (approved by ${record.approvedBy ?? 'a reviewer'}); these args do not run on this approval`,
        );
      }
      emitDecision(
        ctx,
        { action: 'deny', source: 'token', reason: 'the token is bound to another call' },
        true,
      );
      return new DispatchError(
        'idempotency_conflict',
        'The approval was given for another tool, other args or another idempotency key; ask for approval of this call',
      );
    }
    switch (record.status) {
      case 'denied': {
        const reason = record.deniedReason ?? 'a reviewer denied it';
        emitDecision(ctx, { action: 'deny', source: 'token', reason }, true);
        return denied(ctx, reason);
      }
      case 'pending':
        emitDecision(ctx, { action: 'require', source: 'token', reason: record.reason }, true);
        return required_(ctx, record);
    }
    // Approved.
    const reason = `approved by ${record.approvedBy ?? 'a reviewer'}`;
    emitDecision(ctx, { action: 'allow', source: 'token', reason }, true);
    // A redeemed token runs under a key, which the handler and the idempotency layer see; its
    // outcome is kept while the token can be redeemed (twice its life, so that a store whose
    // clock runs behind ours is covered). The store's record of the run is what keeps a
    // later delivery from running it again, however much the idempotency layer forgot.
    runUnderKey(ctx, call.idempotencyKey ?? `approval:${token}`, 2 * this.policy.ttlMs);
    if (this.runs === undefined) return undefined;
    return new Redemption(token, newToken(), () => this.request(ctx, call, verdict, print));
  }

  private async request(
    ctx: DispatchContext,
    call: ApprovalCall,
    verdict: Sourced,
    print: string,
  ): Promise<Checked> {
    const key = call.idempotencyKey ?? null;
    // Redacted before it is stored: a reviewer's screen and a shared store are sinks too.
    const given = verdict.reason ?? 'the tool needs approval';
    const reason = this.redactorFor(ctx).redact(given);
    const callKey = `${call.tool.name}\u0000${print}\u0000${key === null ? `call:${call.callId}` : `key:${key}`}`;
    const preview = previewOf(call.args, this.redactorFor(ctx), this.policy.previewChars);
    const asked: ApprovalRequest = {
      token: newToken(),
      callKey,
      tool: call.tool.name,
      fingerprint: print,
      key,
      callId: call.callId,
      reason,
      ttlMs: this.policy.ttlMs,
      ...(call.tenant === undefined ? {} : { tenant: call.tenant }),
      ...(preview === undefined ? {} : { preview }),
    };
    let opened: { record: ApprovalRecord; created: boolean };
    try {
      opened = await this.policy.store.open(asked);
    } catch (error) {
      return approvalStoreFailed(error);
    }
    const { record, created } = opened;
    if (created) {
      ctx.emit('approval.required', {
        token: record.token,
        reason: record.reason,
        expiresAt: record.expiresAt,
      });
    }
    emitDecision(ctx, verdict, true);
    return required_(ctx, record);
  }
}

// Random bytes are drawn in blocks, as crypto.randomUUID does: one draw per call costs more than
// the rest of a paused call.
const tokenBytes = 18;
let pool = Buffer.alloc(0);
let poolOffset = 0;

let builtins: Redactor | undefined;
// Made on first use: most gates never preview without a dispatcher's redactor.
function builtinRedactor(): Redactor {
  builtins ??= createRedactor();
  return builtins;
}

/** A fresh token: 144 random bits, URL-safe. */
export function newToken(): string {
  if (poolOffset + tokenBytes > pool.length) {
    pool = randomBytes(tokenBytes * 128);
    poolOffset = 0;
  }
  const token = pool.toString('base64url', poolOffset, poolOffset + tokenBytes);
  poolOffset += tokenBytes;
  return token;
}

/** The fingerprint a token is bound to: the tool and its validated args, as base64url. */
export function printOf(call: Pick<ApprovalCall, 'tool' | 'args'>): string {
  return fingerprint(call.tool.name, call.args, 'base64url');
}

function required(source: string, reason: string): Sourced {
  return { action: 'require', source, reason };
}

async function ruleVerdict(
  rule: (args: never, call: ApprovalCall) => unknown,
  call: ApprovalCall,
): Promise<Sourced> {
  let needed: unknown;
  try {
    needed = await rule(call.args as never, call);
  } catch {
    return required('tool', 'its approval rule failed');
  }
  if (needed === false) return allowTool;
  return required(
    'tool',
    needed === true ? 'the tool needs approval for these args' : 'its approval rule gave no answer',
  );
}

function emitDecision(ctx: DispatchContext, verdict: Sourced, enforced: boolean): void {
  const { action, source, reason } = verdict;
  ctx.emit(
    'approval.decision',
    reason === undefined ? { action, source, enforced } : { action, source, reason, enforced },
  );
}

function required_(ctx: DispatchContext, record: ApprovalRecord): DispatchError {
  const approval: ApprovalTicket = {
    token: record.token,
    tool: record.tool,
    callId: record.callId,
    reason: record.reason,
    expiresAt: record.expiresAt,
  };
  return withoutStack(
    () =>
      new DispatchError(
        'approval_required',
        `"${ctx.displayName}" needs a person's approval before it runs (${record.reason}); it has not run`,
        { approval },
      ),
  );
}

// A paused call is an answer, not a fault: nobody reads where its envelope was made, so it is made
// without a stack trace.
function withoutStack<Made>(make: () => Made): Made {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function denied(ctx: DispatchContext, reason: string): DispatchError {
  return new DispatchError('approval_denied', `"${ctx.displayName}" was denied: ${reason}; it has not run`);
}

// The call runs under `key` from here in, its outcome kept at least `keepMs`: the idempotency
// layer and the handler see both.
function runUnderKey(ctx: DispatchContext, key: string, keepMs: number): void {
  const given = ctx.options.idempotencyTtlMs;
  const options: DispatchOptions = {
    ...ctx.options,
    idempotencyKey: key,
    idempotencyTtlMs: given === undefined ? keepMs : Math.max(given, keepMs),
  };
  (ctx as { options: DispatchOptions }).options = options;
}

/** Where `evaluate` finds a tool by name: a `ToolRegistry`, or anything with its `get`. */
export type ToolSource = {
  /** The tool registered under `name`, if any. */
  get(name: string): Tool | undefined;
};
