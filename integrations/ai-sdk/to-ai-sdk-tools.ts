/**
 * The registry as an AI SDK ToolSet whose tools run through the dispatcher.
 * @module
 */

import { jsonSchema, tool, type ToolSet } from 'ai';
import {
  toolAnswer,
  toToolMessage,
  type ApprovalGate,
  type Budget,
  type Dispatcher,
  type DispatchOptions,
  type ToolRegistry,
} from '../../index.js';
import {
  providerCallOptions,
  createNameMap,
  toObjectSchema,
  type NameMapOptions,
  optionKeys,
  rejectUnknownKeys,
} from '../../middleware/index.js';
import { defaultToolTimeoutMs } from '../../src/index.js';
import { attemptTimeoutMs } from '../../middleware/internal-kit.js';
import { ToolCallFailed } from './tool-call-failed.js';

/** Options for `toAiSdkTools`. */
export interface AiSdkToolsOptions {
  /** The tools to offer, all of `registry.list()` when the set is built. */
  registry: Pick<ToolRegistry, 'list'>;
  /** Runs every call. */
  dispatcher: Pick<Dispatcher, 'dispatch'>;
  /**
   * Scopes idempotency keys: each call's key is `${idempotencyScope}:${toolCallId}`. Use a run
   * or conversation id; provider ids repeat across runs.
   * @default undefined (no key, unless `keyByCallId`)
   */
  idempotencyScope?: string;
  /**
   * Without a scope, use the bare `toolCallId` as the key. Only for a provider whose ids never
   * repeat; a scope is the safer choice.
   * @default false
   */
  keyByCallId?: boolean;
  /**
   * How registry names become the ToolSet's keys, which the provider passes to the model
   * unchanged: `createNameMap` options (by default `.` → `__`, checked against
   * `^[a-zA-Z0-9_-]+$` and 64 characters, as OpenAI and Anthropic require), or `false` to keep
   * the registry names (fine for providers that accept dots).
   * @default {}
   */
  names?: NameMapOptions | false;
  /** A budget every call draws from, such as `createBudget(20)` for the whole run. */
  budget?: number | Budget;
  /** A per-attempt timeout for every call, overriding the tools' own; `Infinity` for none. */
  timeoutMs?: number;
  /**
   * The longest text the model is sent for one result, in characters.
   * @default 2000
   */
  maxLength?: number;
  /**
   * An `approvalGate()`: each tool's `needsApproval` is the gate's `evaluate` (`require` → true),
   * and a call the user approved runs with `{ approval: { approvedBy: 'ai-sdk' } }`. On AI SDK 7,
   * `generateText({ toolApproval: aiSdkToolApproval })` answers with the gate's verdict and reason.
   * @default undefined (no tool asks for approval)
   */
  approvals?: Pick<ApprovalGate, 'evaluate'>;
  /**
   * Who each call is for, sent as the dispatch's `tenant` (and to the gate's `evaluate`, so a
   * per-tenant `decide` is asked about the call `needsApproval` judges): a string for a ToolSet
   * built per request, or a function of the call's context: on `ai` 6 its `experimental_context`
   * (what `generateText({ experimental_context })` was given), on `ai` 7, which dropped that, the
   * tool's context (`generateText({ toolsContext: { <key>: … } })`); `undefined` for a direct
   * `execute`.
   * @default undefined (no tenant)
   */
  tenant?: string | ((context: unknown) => string | undefined);
  /**
   * The `timeout` given to AI SDK 7's `generateText` / `streamText`, when it sets per-tool
   * timeouts (`toolMs`, or `tools: { <key>Ms }` by ToolSet key). One timer then owns each call:
   * ours, its deadline the tool's (or `timeoutMs`, else the timeout layer's 30 s default) capped
   * by the host's, so a host timeout shorter than the tool's ends the attempt as our `timeout`
   * (retried by the usual rules), and the host's own timer firing is not taken for a cancel. An
   * `abortSignal` of the caller's still cancels the call.
   * @default undefined (no host timeout)
   */
  hostTimeout?: number | AiSdkHostTimeout;
}

/** The per-tool part of AI SDK 7's `timeout` option (`TimeoutConfiguration`). */
export interface AiSdkHostTimeout {
  /** The host's timeout for every tool, in ms. */
  toolMs?: number;
  /** Per-tool overrides, keyed `<ToolSet key>Ms`. */
  tools?: Record<string, number | undefined>;
  /** Other fields (`totalMs`, `stepMs`, …) are the host's own and ignored here. */
  [other: string]: unknown;
}

/**
 * What `aiSdkToolApproval` answers AI SDK 7's call-level `toolApproval` with (the SDK's
 * `ToolApprovalStatus`, spelled out here because `ai` 6's types have none).
 */
export type AiSdkToolApprovalStatus =
  | {
      /** The call is not one of ours to judge: the tool's own `needsApproval` decides. */
      type: 'not-applicable';
    }
  | {
      /** The gate's answer: run it, refuse it, or ask the user. */
      type: 'approved' | 'denied' | 'user-approval';
      /** The gate's reason, which the SDK puts on its approval response. */
      reason?: string;
    };

/** The part of AI SDK 7's `toolApproval` function argument that `aiSdkToolApproval` reads. */
export interface AiSdkToolApprovalRequest {
  /** The call to judge. */
  toolCall: {
    /** The tool's name in the `ToolSet`. */
    toolName: string;
    /** The call's id, as the model gave it. */
    toolCallId: string;
    /** The call's arguments, parsed. */
    input: unknown;
  };
  /** The call's tools: the `ToolSet` (or a merge of several) given to `generateText`. */
  tools?: Record<string, unknown> | undefined;
  /** `generateText({ toolsContext })`: the tool's entry is what `toAiSdkTools`' `tenant` reads. */
  toolsContext?: Record<string, unknown> | undefined;
}

// Each gated tool toAiSdkTools made, with how its gate answers a call: aiSdkToolApproval finds the
// tool in the call's `tools`, so a ToolSet merged with other tools still answers for its own.
const approvalOfTool = new WeakMap<
  object,
  (input: unknown, toolCallId: string, context: unknown) => Promise<AiSdkToolApprovalStatus>
>();

/**
 * AI SDK 7's call-level `toolApproval` for tools made by `toAiSdkTools({ approvals })`: the gate's
 * `allow` answers `approved` and `deny` answers `denied` (each with the gate's reason, which the
 * SDK puts on its approval response), `require` answers `user-approval` with the reason shown to
 * the approver; a gate in shadow mode, an ungated tool or one from elsewhere is `not-applicable`.
 * `toolApproval` takes precedence over the tools' `needsApproval` (since `ai` 7.0.173), which
 * stays set so that a call without this option (and `ai` 6) still asks the user; a call denied
 * here never reaches `execute`.
 *
 * @example
 * const result = await generateText({
 *   model,
 *   tools: toAiSdkTools({ registry, dispatcher, approvals: gate }),
 *   toolApproval: aiSdkToolApproval,
 *   prompt,
 * });
 */
export async function aiSdkToolApproval(request: AiSdkToolApprovalRequest): Promise<AiSdkToolApprovalStatus> {
  const { toolCall, tools, toolsContext } = request;
  const tool =
    tools !== undefined && Object.hasOwn(tools, toolCall.toolName) ? tools[toolCall.toolName] : undefined;
  const approval = typeof tool === 'object' && tool !== null ? approvalOfTool.get(tool) : undefined;
  if (approval === undefined) return { type: 'not-applicable' };
  const context =
    toolsContext !== undefined && Object.hasOwn(toolsContext, toolCall.toolName)
      ? toolsContext[toolCall.toolName]
      : undefined;
  return approval(toolCall.input, toolCall.toolCallId, context);
}

const aiSdkToolsOptionKeys = optionKeys<AiSdkToolsOptions>({
  registry: true,
  dispatcher: true,
  idempotencyScope: true,
  keyByCallId: true,
  names: true,
  budget: true,
  timeoutMs: true,
  maxLength: true,
  approvals: true,
  tenant: true,
  hostTimeout: true,
});

/**
 * The registry's tools as an AI SDK `ToolSet` for `generateText` / `streamText`: each tool's
 * `execute` dispatches with the call's `toolCallId` as `callId` (and, scoped, as the
 * idempotency key) and the SDK's `abortSignal` (without options: a generated id, no signal). A
 * success returns the result, or its `toJsonSafe` copy when `JSON.stringify` cannot take it (the
 * SDK streams outputs as JSON), and goes to the model as `toToolMessage` text; a failure, or a
 * result that cannot be rendered at all, throws `ToolCallFailed`, which the SDK sends as the
 * call's error text. Schemas are plain JSON Schema with no `validate`, so the dispatcher's schema
 * layer is the one that checks the args. The dispatcher's timeout owns each attempt's
 * deadline; with AI SDK 7's per-tool `timeout`, pass the same object as `hostTimeout` (the host's
 * value caps ours). On AI SDK 7 pass `toolApproval: aiSdkToolApproval` for the gate's verdicts
 * with their reasons.
 *
 * @throws TypeError for a bad option, or two tools whose names map to the same key.
 * @example
 * const result = await generateText({
 *   model,
 *   tools: toAiSdkTools({ registry, dispatcher, idempotencyScope: runId }),
 *   stopWhen: stepCountIs(5),
 *   prompt: 'Find the docs and charge the order',
 * });
 */
export function toAiSdkTools(options: AiSdkToolsOptions): ToolSet {
  const settings = readOptions(options);
  const listings = settings.registry.list();
  const names =
    settings.names === false
      ? undefined
      : createNameMap(
          listings.map((listing) => listing.name),
          settings.names,
        );
  const tools: ToolSet = {};
  const messageOptions = { maxLength: settings.maxLength };
  // The text execute rendered for an object output, so toModelOutput need not render it again.
  const rendered = new WeakMap<object, string>();
  const { approvals } = settings;
  // One place computes a call's options, tenant included, for needsApproval and execute alike.
  const callOptionsOf = (toolCallId: unknown, signal: unknown, displayName: string, context: unknown) => {
    const options = providerCallOptions({
      providerId: toolCallId,
      signal,
      ...settings.keys,
      idPrefix: 'ai-sdk',
      base: settings.base,
      displayName,
    });
    const tenant = settings.tenant(context);
    if (tenant !== undefined) options.tenant = tenant;
    return options;
  };
  // Asked with the call id, idempotency key and tenant the dispatch carries, so a rule judges that call.
  const needsApproval = async (name: string, input: unknown, call: DispatchOptions & { callId: string }) => {
    if (approvals === undefined) return false;
    // The dispatch's own options: evaluate reads their callId, idempotencyKey and tenant.
    const decision = await approvals.evaluate(name, input, call);
    return decision.enforced && decision.action === 'require';
  };
  // AI SDK 7's call-level answer: the gate's verdict and its reason, for aiSdkToolApproval.
  const approvalStatus = async (
    name: string,
    input: unknown,
    call: DispatchOptions & { callId: string },
  ): Promise<AiSdkToolApprovalStatus> => {
    if (approvals === undefined) return { type: 'not-applicable' };
    const decision = await approvals.evaluate(name, input, call);
    if (!decision.enforced) return { type: 'not-applicable' };
    const reason = decision.reason === undefined ? {} : { reason: decision.reason };
    if (decision.action === 'allow') return { type: 'approved', ...reason };
    if (decision.action === 'deny') return { type: 'denied', ...reason };
    return { type: 'user-approval', ...reason };
  };
  for (const listing of listings) {
    const key = names === undefined ? listing.name : names.wireName(listing.name);
    const made = tool({
      description: listing.description,
      // No `validate`: the SDK then passes the parsed JSON through, and our schema layer
      // answers a bad call with its own envelope (and its events), not a raw zod dump.
      inputSchema: jsonSchema<unknown>(
        toObjectSchema(listing.inputSchema) as Parameters<typeof jsonSchema>[0],
      ),
      // The options are the SDK's, but a direct `execute(input)` (a test, a hand-rolled loop)
      // passes none: the call then gets a generated id and no signal.
      ...(approvals === undefined
        ? {}
        : {
            needsApproval: (
              input: unknown,
              options: { toolCallId: string; experimental_context?: unknown },
            ) =>
              needsApproval(
                listing.name,
                input,
                callOptionsOf(options.toolCallId, undefined, key, contextOf(options)),
              ),
          }),
      async execute(input, options) {
        // With a host per-tool timeout, our capped timer owns the deadline (see `hostTimeout`).
        const hostMs = hostToolMs(settings.hostTimeout, key);
        const owned = hostMs === undefined ? undefined : withoutHostTimeout(options?.abortSignal);
        const callOptions = callOptionsOf(
          options?.toolCallId,
          owned === undefined ? options?.abortSignal : owned.signal,
          key,
          contextOf(options),
        );
        if (hostMs !== undefined) {
          callOptions.timeoutMs = Math.min(
            attemptTimeoutMs(settings.base.timeoutMs, listing, defaultToolTimeoutMs),
            hostMs,
          );
        }
        let outcome: Awaited<ReturnType<Dispatcher['dispatch']>>;
        try {
          // The SDK runs a call that needs approval only once the user approved it, in this
          // request or an earlier one (a new ToolSet per request knows nothing of it).
          const approved = await needsApproval(listing.name, input, callOptions);
          outcome = await settings.dispatcher.dispatch(
            listing.name,
            input,
            approved ? { ...callOptions, approval: { approvedBy: 'ai-sdk' } } : callOptions,
          );
        } finally {
          owned?.release();
        }
        // The SDK streams and stores the output as JSON (UI message streams, step results), so
        // one JSON.stringify cannot take is swapped for its JSON-safe copy; one that cannot be
        // rendered at all is an `internal` failure.
        const answer = toolAnswer(outcome, { ...messageOptions, displayName: key, serializable: true });
        if (!answer.outcome.ok) throw new ToolCallFailed(answer.outcome, messageOptions);
        const { result } = answer.outcome;
        if (typeof result === 'object' && result !== null) rendered.set(result, answer.text);
        return result;
      },
      // The application keeps the result in `toolResults`; the model reads it as
      // `toToolMessage` renders it (bigints, cycles and long results included).
      toModelOutput: ({ output }) => ({
        type: 'text',
        value:
          (typeof output === 'object' && output !== null ? rendered.get(output) : undefined) ??
          toToolMessage({ ok: true, result: output, attempts: 1 }, messageOptions),
      }),
    });
    if (approvals !== undefined) {
      approvalOfTool.set(made, (input, toolCallId, context) =>
        approvalStatus(listing.name, input, callOptionsOf(toolCallId, undefined, key, context)),
      );
    }
    Object.defineProperty(tools, key, { enumerable: true, writable: true, configurable: true, value: made });
  }
  return tools;
}

interface Settings {
  registry: Pick<ToolRegistry, 'list'>;
  dispatcher: Pick<Dispatcher, 'dispatch'>;
  keys: { readonly idempotencyScope: string | undefined; readonly keyByCallId: boolean };
  names: NameMapOptions | false;
  base: DispatchOptions;
  maxLength: number;
  approvals: Pick<ApprovalGate, 'evaluate'> | undefined;
  tenant: (context: unknown) => string | undefined;
  hostTimeout: number | AiSdkHostTimeout | undefined;
}

function readOptions(options: AiSdkToolsOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`toAiSdkTools() needs an options object, got ${String(options)}`);
  }
  rejectUnknownKeys('toAiSdkTools', options, aiSdkToolsOptionKeys);
  const {
    registry,
    dispatcher,
    idempotencyScope,
    keyByCallId = false,
    names = {},
    budget,
    timeoutMs,
    maxLength = 2000,
    approvals,
    tenant,
    hostTimeout,
  } = options;
  if (
    hostTimeout !== undefined &&
    !(typeof hostTimeout === 'number' && hostTimeout > 0) &&
    (typeof hostTimeout !== 'object' || hostTimeout === null)
  ) {
    throw new TypeError(
      `toAiSdkTools(): hostTimeout must be generateText's timeout (a number or an object), got ${String(hostTimeout)}`,
    );
  }
  if (typeof registry?.list !== 'function') {
    throw new TypeError('toAiSdkTools(): registry must be a ToolRegistry');
  }
  if (approvals !== undefined && typeof approvals?.evaluate !== 'function') {
    throw new TypeError('toAiSdkTools(): approvals must be an approvalGate()');
  }
  if (typeof dispatcher?.dispatch !== 'function') {
    throw new TypeError('toAiSdkTools(): dispatcher must be a Dispatcher');
  }
  if (
    idempotencyScope !== undefined &&
    (typeof idempotencyScope !== 'string' || idempotencyScope.length === 0)
  ) {
    throw new TypeError(
      `toAiSdkTools(): idempotencyScope must be a non-empty string, got ${String(idempotencyScope)}`,
    );
  }
  if (typeof keyByCallId !== 'boolean') {
    throw new TypeError(`toAiSdkTools(): keyByCallId must be a boolean, got ${String(keyByCallId)}`);
  }
  if (names !== false && (typeof names !== 'object' || names === null)) {
    throw new TypeError(`toAiSdkTools(): names must be createNameMap options or false, got ${String(names)}`);
  }
  if (
    budget !== undefined &&
    !(typeof budget === 'number' && !Number.isNaN(budget)) &&
    !(typeof budget === 'object' && budget !== null)
  ) {
    throw new TypeError('toAiSdkTools(): budget must be a number or a budget from createBudget()');
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
    throw new TypeError(
      `toAiSdkTools(): timeoutMs must be a number > 0 (or Infinity), got ${String(timeoutMs)}`,
    );
  }
  if (maxLength !== Infinity && !(Number.isInteger(maxLength) && maxLength >= 1)) {
    throw new TypeError(
      `toAiSdkTools(): maxLength must be an integer >= 1 (or Infinity), got ${String(maxLength)}`,
    );
  }
  if (
    tenant !== undefined &&
    typeof tenant !== 'function' &&
    (typeof tenant !== 'string' || tenant.length === 0)
  ) {
    throw new TypeError(
      `toAiSdkTools(): tenant must be a non-empty string or a function, got ${String(tenant)}`,
    );
  }
  const base: DispatchOptions = {};
  if (budget !== undefined) base.budget = budget;
  if (timeoutMs !== undefined) base.timeoutMs = timeoutMs;
  return {
    registry,
    dispatcher,
    keys: { idempotencyScope, keyByCallId },
    names,
    base,
    maxLength,
    approvals,
    tenant: tenantReader(tenant),
    hostTimeout,
  };
}

// An empty or non-string answer means "no tenant" for this call.
function tenantReader(tenant: AiSdkToolsOptions['tenant']): (context: unknown) => string | undefined {
  if (typeof tenant !== 'function') return () => tenant;
  return (context) => {
    const value = tenant(context);
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
}

// The host's per-tool timeout for a ToolSet key, as AI SDK 7 reads it (`tools.<key>Ms`, else
// `toolMs`); a plain number is the host's total timeout, not a tool's.
function hostToolMs(timeout: number | AiSdkHostTimeout | undefined, key: string): number | undefined {
  if (timeout === undefined || typeof timeout === 'number') return undefined;
  const ms = timeout.tools?.[`${key}Ms`] ?? timeout.toolMs;
  return typeof ms === 'number' && ms > 0 ? ms : undefined;
}

// The SDK merges the caller's abortSignal with `AbortSignal.timeout(toolMs)`; our capped timer
// owns that deadline, so only an abort that is not a timeout passes through.
function withoutHostTimeout(
  signal: AbortSignal | undefined,
): { signal: AbortSignal; release: () => void } | undefined {
  if (signal === undefined) return undefined;
  const controller = new AbortController();
  const isHostTimer = (reason: unknown) => reason instanceof DOMException && reason.name === 'TimeoutError';
  const forward = () => {
    if (!isHostTimer(signal.reason)) controller.abort(signal.reason);
  };
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  return { signal: controller.signal, release: () => signal.removeEventListener('abort', forward) };
}

// The context a `tenant` function reads: AI SDK 6 passes `experimental_context` (the key present
// even when unset); AI SDK 7 dropped it for the tool's own `context` (from `toolsContext`).
function contextOf(options: object | undefined): unknown {
  if (options === undefined) return undefined;
  if ('experimental_context' in options) return options.experimental_context;
  return 'context' in options ? options.context : undefined;
}
