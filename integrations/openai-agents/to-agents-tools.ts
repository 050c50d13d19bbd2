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
  type ToolListing,
  type ToolRegistry,
} from '../../index.js';
import {
  providerCallOptions,
  createNameMap,
  maxTimerDelayMs,
  nearestName,
  toObjectSchema,
  type NameMapOptions,
  optionKeys,
  rejectUnknownKeys,
} from '../../middleware/index.js';
import { defaultToolTimeoutMs } from '../../src/index.js';
import { attemptTimeoutMs } from '../../middleware/internal-kit.js';
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
  /**
   * The Agents SDK's per-tool timeout (`tool({ timeoutMs })`) for these tools: one number for
   * every tool, or numbers by tool (its wire name or registry name). One timer then owns each
   * call: ours, its deadline the tool's (or `timeoutMs`, else the timeout layer's 30 s default)
   * capped by the host's, so a host timeout shorter than the tool's ends the attempt as our
   * `timeout` (retried by the usual rules) and the model reads our text. The tools never show the
   * SDK a `timeoutMs`, so its own timer is never armed to race ours; a `timeoutMs` assigned to a
   * returned tool is taken as its host timeout the same way (and reads back `undefined`).
   * @default undefined (no host timeout)
   */
  hostTimeout?: number | Readonly<Record<string, number>>;
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
  hostTimeout: true,
});

/**
 * The registry's tools as Agents SDK function tools: non-strict JSON Schema parameters (so the
 * SDK does not validate, and our schema layer does), `errorFunction: null`, and no
 * `timeoutMs` (the dispatcher's timeout owns each attempt's deadline; a per-tool timeout of the
 * host's goes in `hostTimeout`, and caps ours). Each call dispatches
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
  const wireNameOf = (name: string) => (names === undefined ? name : names.wireName(name));
  checkHostTimeoutNames(
    options.hostTimeout,
    listings.flatMap((listing) => [wireNameOf(listing.name), listing.name]),
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
    const wireName = wireNameOf(listing.name);
    // The host's per-tool timeout: from the options, or assigned to the tool later.
    let hostMs = settings.hostTimeout(listing.name, wireName);
    const made = tool({
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
        // With a host per-tool timeout, our timer owns the deadline, capped by the host's.
        if (hostMs !== undefined) call.timeoutMs = Math.min(ownTimeoutMs(settings.base, listing), hostMs);
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
    // The Runner races a timer of its own against `execute` for a tool with a `timeoutMs`, and on
    // firing answers the model in its words while our attempt runs on: the tool shows it none, and
    // one assigned to it caps ours instead (a copy spread with its own `timeoutMs` escapes this).
    Object.defineProperty(made, 'timeoutMs', {
      get: () => undefined,
      set: (ms: unknown) => {
        hostMs = ms === undefined ? undefined : checkHostMs(`timeoutMs of "${wireName}"`, ms);
      },
      enumerable: true,
      configurable: true,
    });
    return made;
  });
}

// The attempt's deadline without the host's cap: the caller's, else the tool's (the total of an
// idle one), else the timeout layer's default.
function ownTimeoutMs(base: DispatchOptions, listing: ToolListing): number {
  return attemptTimeoutMs(base.timeoutMs, listing, defaultToolTimeoutMs);
}

// A per-tool timeout as the SDK takes one: a finite number of ms > 0, within a timer's range.
function checkHostMs(what: string, ms: unknown): number {
  if (typeof ms !== 'number' || !(ms > 0) || !(ms <= maxTimerDelayMs)) {
    throw new TypeError(
      `toAgentsTools(): ${what} must be a number of ms > 0 and <= ${maxTimerDelayMs}, got ${String(ms)}`,
    );
  }
  return ms;
}

// A key of `hostTimeout` that names none of the tools is a typo, not a tool with no timeout.
function checkHostTimeoutNames(hostTimeout: AgentsToolsOptions['hostTimeout'], known: string[]): void {
  if (typeof hostTimeout !== 'object') return;
  for (const name of Object.keys(hostTimeout)) {
    if (known.includes(name)) continue;
    const near = nearestName(name, known);
    throw new TypeError(
      `toAgentsTools(): hostTimeout names no tool "${name}"${near === undefined ? '' : `; did you mean "${near}"?`}`,
    );
  }
}

// The host's per-tool timeout for a tool, by wire name or registry name.
function hostTimeoutReader(
  given: AgentsToolsOptions['hostTimeout'],
): (name: string, wireName: string) => number | undefined {
  if (given === undefined) return () => undefined;
  if (typeof given === 'number') return () => given;
  // Own keys only: a tool named "constructor" has no timeout from Object.prototype.
  return (name, wireName) =>
    Object.hasOwn(given, wireName) ? given[wireName] : Object.hasOwn(given, name) ? given[name] : undefined;
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
  hostTimeout: (name: string, wireName: string) => number | undefined;
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
    hostTimeout,
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
  checkHostTimeout(hostTimeout);
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
    hostTimeout: hostTimeoutReader(hostTimeout),
  };
}

function checkHostTimeout(hostTimeout: AgentsToolsOptions['hostTimeout']): void {
  if (hostTimeout === undefined || typeof hostTimeout === 'number') {
    if (hostTimeout !== undefined) checkHostMs('hostTimeout', hostTimeout);
    return;
  }
  if (typeof hostTimeout !== 'object' || hostTimeout === null || Array.isArray(hostTimeout)) {
    throw new TypeError(
      `toAgentsTools(): hostTimeout must be a number or numbers by tool name, got ${String(hostTimeout)}`,
    );
  }
  for (const [name, ms] of Object.entries(hostTimeout))
    checkHostMs(`hostTimeout[${JSON.stringify(name)}]`, ms);
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
