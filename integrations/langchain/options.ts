/**
 * The options both LangChain factories share, read and checked once when the factory is called.
 * @module
 */

import type {
  ApprovalGate,
  Budget,
  Dispatcher,
  DispatchOptions,
  ToolListing,
  ToolRegistry,
} from '../../index.js';
import {
  createNameMap,
  type NameMap,
  type NameMapOptions,
  optionKeys,
  rejectUnknownKeys,
} from '../../middleware/index.js';

/** What an `idempotencyScope` function is given: LangChain's runtime for the call. */
export interface LangChainScopeRuntime {
  /** The run's context (`agent.invoke(input, { context })`). */
  readonly context?: unknown;
  /** The run's configurable values, such as `thread_id`. */
  readonly configurable?: Record<string, unknown> | undefined;
}

/** Options for `dispatcherMiddleware` and `toLangChainTools`. */
export interface LangChainToolsOptions {
  /** The tools to offer, all of `registry.list()` when the factory is called. */
  registry: Pick<ToolRegistry, 'list'>;
  /** Runs every call. */
  dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  /**
   * Scopes idempotency keys: each call's key is `${scope}:${toolCall.id}`. A string for an
   * agent built per run; a function of the call's runtime for an agent shared by many runs,
   * e.g. `(runtime) => runtime.configurable?.thread_id`. Provider ids repeat across runs.
   * @default undefined (no key, unless `keyByCallId`)
   */
  idempotencyScope?: string | ((runtime: LangChainScopeRuntime) => string | undefined);
  /**
   * Without a scope, use the bare `toolCall.id` as the key. Only for a provider whose ids
   * never repeat; a scope is the safer choice.
   * @default false
   */
  keyByCallId?: boolean;
  /**
   * How registry names become the names the model sees (LangChain passes them to the provider
   * unchanged): `createNameMap` options (by default `.` → `__`, checked against
   * `^[a-zA-Z0-9_-]+$` and 64 characters, as OpenAI and Anthropic require), or `false` to keep
   * the registry names.
   * @default {}
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
  /**
   * The dispatcher's `approvalGate()` (`dispatcherMiddleware` only): a call it requires raises
   * one interrupt shaped as `humanInTheLoopMiddleware`'s after the model turn (the agent needs a
   * checkpointer); resumed with `{ decisions }`, an `approve` runs the call with
   * `{ approval: { approvedBy } }`, an `edit` runs the edited args (validated again), a `reject` is
   * `approval_denied` with the reviewer's message as the reason.
   * @default undefined (the gate answers a gated call `approval_required` itself)
   */
  approvals?: Pick<ApprovalGate, 'evaluate'>;
  /**
   * Who each call is for, sent as the dispatch's `tenant` (and, with `approvals`, to the gate's
   * `evaluate`, so a per-tenant `decide` is asked about the call the review judges): a string for
   * an agent built per tenant, or a function of the call's runtime, e.g.
   * `(runtime) => (runtime.context as { tenant: string }).tenant`.
   * @default undefined (no tenant)
   */
  tenant?: string | ((runtime: LangChainScopeRuntime) => string | undefined);
}

const langChainToolsOptionKeys = optionKeys<LangChainToolsOptions>({
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
});

/** The checked options, with the name map built. */
export interface Settings {
  readonly dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  readonly listings: readonly ToolListing[];
  /** Registry name to wire name and back, for the tools of this set only. */
  readonly names: NameMap | undefined;
  /** Wire name to registry name of each offered tool: the only names a call may run. */
  readonly offered: ReadonlyMap<string, string>;
  readonly scope: (runtime: LangChainScopeRuntime | undefined) => string | undefined;
  readonly keyByCallId: boolean;
  readonly base: DispatchOptions;
  readonly maxLength: number;
  readonly approvals: Pick<ApprovalGate, 'evaluate'> | undefined;
  /** The call's tenant in `runtime`, if any. */
  readonly tenant: (runtime: LangChainScopeRuntime | undefined) => string | undefined;
}

/** Reads and checks `options` for the factory called `caller`. */
export function readOptions(caller: string, options: LangChainToolsOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${caller}() needs an options object, got ${String(options)}`);
  }
  rejectUnknownKeys(caller, options, langChainToolsOptionKeys);
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
  } = options;
  if (typeof registry?.list !== 'function')
    throw new TypeError(`${caller}(): registry must be a ToolRegistry`);
  if (typeof dispatcher?.dispatch !== 'function' || typeof dispatcher.dispatchJson !== 'function') {
    throw new TypeError(`${caller}(): dispatcher must be a Dispatcher`);
  }
  if (
    idempotencyScope !== undefined &&
    typeof idempotencyScope !== 'function' &&
    (typeof idempotencyScope !== 'string' || idempotencyScope.length === 0)
  ) {
    throw new TypeError(
      `${caller}(): idempotencyScope must be a non-empty string or a function, got ${String(idempotencyScope)}`,
    );
  }
  if (typeof keyByCallId !== 'boolean') {
    throw new TypeError(`${caller}(): keyByCallId must be a boolean, got ${String(keyByCallId)}`);
  }
  if (names !== false && (typeof names !== 'object' || names === null)) {
    throw new TypeError(`${caller}(): names must be createNameMap options or false, got ${String(names)}`);
  }
  if (
    budget !== undefined &&
    !(typeof budget === 'number' && !Number.isNaN(budget)) &&
    !(typeof budget === 'object' && budget !== null)
  ) {
    throw new TypeError(`${caller}(): budget must be a number or a budget from createBudget()`);
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
    throw new TypeError(
      `${caller}(): timeoutMs must be a number > 0 (or Infinity), got ${String(timeoutMs)}`,
    );
  }
  if (maxLength !== Infinity && !(Number.isInteger(maxLength) && maxLength >= 1)) {
    throw new TypeError(
      `${caller}(): maxLength must be an integer >= 1 (or Infinity), got ${String(maxLength)}`,
    );
  }
  if (approvals !== undefined && typeof approvals?.evaluate !== 'function') {
    throw new TypeError(`${caller}(): approvals must be an approvalGate()`);
  }
  if (
    tenant !== undefined &&
    typeof tenant !== 'function' &&
    (typeof tenant !== 'string' || tenant.length === 0)
  ) {
    throw new TypeError(
      `${caller}(): tenant must be a non-empty string or a function, got ${String(tenant)}`,
    );
  }
  const listings = registry.list();
  const base: DispatchOptions = {};
  if (budget !== undefined) base.budget = budget;
  if (timeoutMs !== undefined) base.timeoutMs = timeoutMs;
  const nameMap =
    names === false
      ? undefined
      : createNameMap(
          listings.map((listing) => listing.name),
          names,
        );
  const offered = new Map(
    listings.map((listing) => [
      nameMap === undefined ? listing.name : nameMap.wireName(listing.name),
      listing.name,
    ]),
  );
  return {
    dispatcher,
    listings,
    names: nameMap,
    offered,
    scope: runtimeReader(idempotencyScope),
    keyByCallId,
    base,
    maxLength,
    approvals,
    tenant: runtimeReader(tenant),
  };
}

// A string, or a function of the call's runtime (`idempotencyScope`, `tenant`).
function runtimeReader(
  given: string | ((runtime: LangChainScopeRuntime) => string | undefined) | undefined,
): (runtime: LangChainScopeRuntime | undefined) => string | undefined {
  if (typeof given !== 'function') return () => given;
  return (runtime) => {
    const value = given(runtime ?? {});
    // An empty or non-string answer means "none" for this call: never a key like ":call_1",
    // never a tenant "".
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
}
