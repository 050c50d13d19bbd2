/**
 * The registry as OpenAI Agents SDK function tools whose calls run through the dispatcher.
 * @module
 */

import { tool, type FunctionTool, type RunContext } from '@openai/agents';
import {
  toolAnswer,
  type ApprovalGate,
  type Budget,
  type Dispatcher,
  type DispatchOptions,
  type Outcome,
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
import { exactRejectionOf, watchRejections } from './exact-rejections.js';

/** Which call an outcome belongs to, as `onOutcome` is told. */
export interface AgentsToolCall {
  /** The dispatch's call id: the Responses `call_id`, or a generated one. */
  readonly callId: string;
  /** The registry name that was dispatched. */
  readonly toolName: string;
  /** The name the model called it by. */
  readonly wireName: string;
}

/** Options for `toAgentsTools`. */
export interface AgentsToolsOptions {
  /** The tools to offer, all of `registry.list()` when the tools are built. */
  registry: Pick<ToolRegistry, 'list'>;
  /** Runs every call. */
  dispatcher: Pick<Dispatcher, 'dispatch'>;
  /**
   * Scopes idempotency keys: each call's key is `${scope}:${call_id}`. A string for tools
   * built per run; a function of the run context for an agent shared by many runs, e.g.
   * `(rc) => rc.context.runId`.
   * @default undefined (no key, unless `keyByCallId`)
   */
  idempotencyScope?: string | ((runContext: RunContext<unknown>) => string | undefined);
  /**
   * Without a scope, use the bare `call_id` as the key. Only for a provider whose ids never
   * repeat; a scope is the safer choice.
   * @default false
   */
  keyByCallId?: boolean;
  /**
   * How registry names become the names the model sees (the Responses API accepts
   * `^[a-zA-Z0-9_-]+$`, 64 characters): `createNameMap` options, or `false` to keep the
   * registry names.
   * @default {} (`.` → `__`)
   */
  names?: NameMapOptions | false;
  /** A budget every call draws from, such as `createBudget(20)`. */
  budget?: number | Budget;
  /** A per-attempt timeout for every call, overriding the tools' own; `Infinity` for none. */
  timeoutMs?: number;
  /**
   * The longest text the model is sent for one result, in characters.
   * @default 2000
   */
  maxLength?: number;
  /** Sees every outcome (the envelope, for failures) before the model gets its text. */
  onOutcome?: (outcome: Outcome, call: AgentsToolCall) => void;
  /**
   * An `approvalGate()`: each tool's `needsApproval` is the gate's `evaluate` (`require` → true,
   * an interruption the run resumes from), and a call approved through the run state runs with
   * `{ approval: { approvedBy: 'openai-agents' } }`.
   * @default undefined (no tool asks for approval)
   */
  approvals?: Pick<ApprovalGate, 'evaluate'>;
  /**
   * Who each call is for, sent as the dispatch's `tenant` (and to the gate's `evaluate`, so a
   * per-tenant `decide` is asked about the call `needsApproval` judges): a string for tools built
   * per run, or a function of the run context, e.g. `(rc) => rc.context.tenant`.
   * @default undefined (no tenant)
   */
  tenant?: string | ((runContext: RunContext<unknown>) => string | undefined);
}

const agentsToolsOptionKeys = optionKeys<AgentsToolsOptions>({
  registry: true,
  dispatcher: true,
  idempotencyScope: true,
  keyByCallId: true,
  names: true,
  budget: true,
  timeoutMs: true,
  maxLength: true,
  onOutcome: true,
  approvals: true,
  tenant: true,
});

/**
 * The registry's tools as Agents SDK function tools: non-strict JSON Schema parameters (so the
 * SDK does not validate, and our schema layer does), `errorFunction: null`, and no
 * `timeoutMs` (the dispatcher's timeout owns each attempt's deadline). Each call dispatches
 * with the Responses `call_id` as its call id (and, scoped, as its key) and the run's signal,
 * and returns `toToolMessage` text, success or failure. The Runner answers malformed JSON
 * itself ("An error occurred while parsing tool arguments…"), `""` included; an unknown tool
 * ends the run unless `run(…, { toolNotFoundBehavior: 'return_error_to_model' })`.
 *
 * @throws TypeError for a bad option, or two tools whose names map to the same wire name.
 * @example
 * const agent = new Agent({
 *   name: 'assistant',
 *   tools: toAgentsTools({ registry, dispatcher, idempotencyScope: (rc) => (rc.context as { runId: string }).runId }),
 * });
 * await run(agent, 'pay the invoice', { context: { runId }, signal });
 */
export function toAgentsTools(options: AgentsToolsOptions): FunctionTool<unknown, never, string>[] {
  const settings = readOptions(options);
  const listings = settings.registry.list();
  const names =
    settings.names === false
      ? undefined
      : createNameMap(
          listings.map((listing) => listing.name),
          settings.names,
        );
  const { approvals } = settings;
  // Asked with the call id, idempotency key and tenant the dispatch carries, so a rule judges that call.
  const needsApproval = async (name: string, input: unknown, call: DispatchOptions & { callId: string }) => {
    if (approvals === undefined) return false;
    // The dispatch's own options: evaluate reads their callId, idempotencyKey and tenant.
    const decision = await approvals.evaluate(name, input, call);
    return decision.enforced && decision.action === 'require';
  };
  const callOptionsOf = (
    runContext: RunContext<unknown> | undefined,
    callId: unknown,
    signal: unknown,
    wireName: string,
  ) => {
    const options = providerCallOptions({
      providerId: callId,
      signal,
      idempotencyScope: settings.scope(runContext),
      keyByCallId: settings.keyByCallId,
      idPrefix: 'openai-agents',
      base: settings.base,
      displayName: wireName,
    });
    // One place computes a call's options, tenant included, for needsApproval and execute alike.
    const tenant = settings.tenant(runContext);
    if (tenant !== undefined) options.tenant = tenant;
    return options;
  };
  return listings.map((listing) => {
    const wireName = names === undefined ? listing.name : names.wireName(listing.name);
    return tool({
      ...(approvals === undefined
        ? {}
        : {
            needsApproval: async (runContext: RunContext<unknown>, input: unknown, callId?: string) => {
              const required = await needsApproval(
                listing.name,
                input,
                callOptionsOf(runContext, callId, undefined, wireName),
              );
              // The decisions a person takes on this run are watched, so an exact rejection
              // survives a later change of the tool's default (fixed upstream in 0.23.1).
              if (required) watchRejections(runContext);
              return required;
            },
          }),
      name: wireName,
      description: listing.description,
      // Non-strict JSON Schema: the SDK parses the JSON and passes it on unchecked.
      parameters: toObjectSchema(listing.inputSchema) as unknown as NonStrictParameters,
      strict: false,
      errorFunction: null,
      async execute(input, runContext, details) {
        const call = callOptionsOf(runContext, details?.toolCall?.callId, details?.signal, wireName);
        // A call a person rejected never runs, even if the run state now approves the tool by
        // default: it goes through the stack as denied, so every layer sees the refusal.
        const rejection =
          approvals === undefined ? undefined : exactRejectionOf(runContext, wireName, call.callId);
        // The Runner runs a call that needs approval only once the run state approved it.
        const approved = rejection === undefined && (await needsApproval(listing.name, input, call));
        const outcome = await settings.dispatcher.dispatch(
          listing.name,
          input,
          rejection !== undefined
            ? { ...call, approval: { deniedBy: 'openai-agents', reason: rejection.reason } }
            : approved
              ? { ...call, approval: { approvedBy: 'openai-agents' } }
              : call,
        );
        // A result that cannot be rendered is an `internal` outcome, for onOutcome as for the model.
        const answer = toolAnswer(outcome, { maxLength: settings.maxLength, displayName: wireName });
        settings.onOutcome?.(answer.outcome, { callId: call.callId, toolName: listing.name, wireName });
        return answer.text;
      },
    }) as unknown as FunctionTool<unknown, never, string>;
  });
}

// The SDK's type for a non-strict JSON Schema; toObjectSchema's result is one at run time.
type NonStrictParameters = {
  type: 'object';
  properties: Record<string, never>;
  required: never[];
  additionalProperties: true;
};

interface Settings {
  registry: Pick<ToolRegistry, 'list'>;
  dispatcher: Pick<Dispatcher, 'dispatch'>;
  scope: (runContext: RunContext<unknown> | undefined) => string | undefined;
  keyByCallId: boolean;
  names: NameMapOptions | false;
  base: DispatchOptions;
  maxLength: number;
  onOutcome: AgentsToolsOptions['onOutcome'];
  approvals: Pick<ApprovalGate, 'evaluate'> | undefined;
  tenant: (runContext: RunContext<unknown> | undefined) => string | undefined;
}

function readOptions(options: AgentsToolsOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`toAgentsTools() needs an options object, got ${String(options)}`);
  }
  rejectUnknownKeys('toAgentsTools', options, agentsToolsOptionKeys);
  const {
    registry,
    dispatcher,
    idempotencyScope,
    keyByCallId = false,
    names = {},
    budget,
    timeoutMs,
    maxLength = 2000,
    onOutcome,
    approvals,
    tenant,
  } = options;
  if (approvals !== undefined && typeof approvals?.evaluate !== 'function') {
    throw new TypeError('toAgentsTools(): approvals must be an approvalGate()');
  }
  if (typeof registry?.list !== 'function')
    throw new TypeError('toAgentsTools(): registry must be a ToolRegistry');
  if (typeof dispatcher?.dispatch !== 'function')
    throw new TypeError('toAgentsTools(): dispatcher must be a Dispatcher');
  if (
    idempotencyScope !== undefined &&
    typeof idempotencyScope !== 'function' &&
    (typeof idempotencyScope !== 'string' || idempotencyScope.length === 0)
  ) {
    throw new TypeError(
      `toAgentsTools(): idempotencyScope must be a non-empty string or a function, got ${String(idempotencyScope)}`,
    );
  }
  if (typeof keyByCallId !== 'boolean') {
    throw new TypeError(`toAgentsTools(): keyByCallId must be a boolean, got ${String(keyByCallId)}`);
  }
  if (names !== false && (typeof names !== 'object' || names === null)) {
    throw new TypeError(
      `toAgentsTools(): names must be createNameMap options or false, got ${String(names)}`,
    );
  }
  if (
    budget !== undefined &&
    !(typeof budget === 'number' && !Number.isNaN(budget)) &&
    !(typeof budget === 'object' && budget !== null)
  ) {
    throw new TypeError('toAgentsTools(): budget must be a number or a budget from createBudget()');
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
    throw new TypeError(
      `toAgentsTools(): timeoutMs must be a number > 0 (or Infinity), got ${String(timeoutMs)}`,
    );
  }
  if (maxLength !== Infinity && !(Number.isInteger(maxLength) && maxLength >= 1)) {
    throw new TypeError(
      `toAgentsTools(): maxLength must be an integer >= 1 (or Infinity), got ${String(maxLength)}`,
    );
  }
  if (onOutcome !== undefined && typeof onOutcome !== 'function') {
    throw new TypeError(`toAgentsTools(): onOutcome must be a function, got ${String(onOutcome)}`);
  }
  if (
    tenant !== undefined &&
    typeof tenant !== 'function' &&
    (typeof tenant !== 'string' || tenant.length === 0)
  ) {
    throw new TypeError(
      `toAgentsTools(): tenant must be a non-empty string or a function, got ${String(tenant)}`,
    );
  }
  const base: DispatchOptions = {};
  if (budget !== undefined) base.budget = budget;
  if (timeoutMs !== undefined) base.timeoutMs = timeoutMs;
  return {
    registry,
    dispatcher,
    scope: runContextReader(idempotencyScope),
    keyByCallId,
    names,
    base,
    maxLength,
    onOutcome,
    approvals,
    tenant: runContextReader(tenant),
  };
}

// A string, or a function of the run context (none for a direct `execute`). An empty or
// non-string answer means "none" for this call: never a key like ":call_1", never a tenant "".
function runContextReader(
  given: string | ((runContext: RunContext<unknown>) => string | undefined) | undefined,
): (runContext: RunContext<unknown> | undefined) => string | undefined {
  if (typeof given !== 'function') return () => given;
  return (runContext) => {
    if (runContext === undefined) return undefined;
    const value = given(runContext);
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
}
