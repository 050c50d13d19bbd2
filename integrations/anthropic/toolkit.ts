/**
 * createAnthropicToolkit: the registry as Claude tools, a turn's tool uses run through the
 * dispatcher, and runnable tools for the SDK's tool runner.
 * @module
 */

import type { BetaRunnableTool, BetaToolRunContext } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type { BetaMessage } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { Message, Tool, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';
import {
  type DispatchError,
  toolAnswer,
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
  type JsonObjectSchema,
  type NameMap,
  type NameMapOptions,
  optionKeys,
  rejectUnknownKeys,
} from '../../middleware/index.js';
import { notOfferedName } from '../provider/not-offered.js';
import { checkToolkitOptions, readRunOptions } from '../provider/options.js';

/** Options for `createAnthropicToolkit`. */
export interface AnthropicToolkitOptions {
  /**
   * The tools to offer; read once, when the toolkit is built. Only these run: a call to any other
   * name (a tool registered later included) goes through the stack under a name no registry
   * holds, so the dispatcher answers it `not_found` and every layer sees it.
   */
  registry: Pick<ToolRegistry, 'list'>;
  /** Runs the calls. */
  dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  /**
   * Makes idempotency keys `${idempotencyScope}:${toolUseId}`: a run or conversation id. Without
   * it no key is passed (no dedupe) unless `keyByCallId` is set.
   */
  idempotencyScope?: string;
  /**
   * Without a scope, use the bare `tool_use` id as the idempotency key.
   * @default false
   */
  keyByCallId?: boolean;
  /**
   * How registry names become wire names.
   * @default { pattern: /^[a-zA-Z0-9_-]+$/, maxLength: 128, encode: '.' → '__' }
   */
  names?: NameMapOptions;
  /**
   * The longest tool result text, in characters (`toToolMessage`'s `maxLength`).
   * @default 2000
   */
  maxMessageLength?: number;
}

const anthropicToolkitOptionKeys = optionKeys<AnthropicToolkitOptions>({
  registry: true,
  dispatcher: true,
  idempotencyScope: true,
  keyByCallId: true,
  names: true,
  maxMessageLength: true,
});

/** Per-turn options of `runToolUses`. */
export interface AnthropicRunOptions {
  /** Aborts every call of the turn; `null` counts as none. */
  signal?: AbortSignal | null;
  /** The tool-call budget: a shared `createBudget(n)`, or a number of attempts this turn may make in all. */
  budget?: number | Budget;
  /** Per-attempt timeout for every call, overriding each tool's. */
  timeoutMs?: number;
  /** This turn's idempotency scope, instead of the toolkit's. */
  idempotencyScope?: string;
  /**
   * Approvals for calls an `approvalGate` paused, by `tool_use` id: the token from the call's
   * `approval_required` outcome, or `{ approvedBy }` when the host asked a person itself.
   * @default {}
   */
  approvals?: Readonly<
    Record<
      string,
      | string
      | {
          /** Who approved the call (a person the host asked), recorded with it. */
          approvedBy: string;
        }
    >
  >;
}

/** Options for `runnableTools`. */
export interface RunnableToolsOptions {
  /** The tool-call budget every call of the runner's loop shares: a `createBudget(n)`, or a number made into one. */
  budget?: number | Budget;
  /** Per-attempt timeout for every call, overriding each tool's. */
  timeoutMs?: number;
  /**
   * The SDK's `ToolError` (`import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError'`).
   * The runner sends a `ToolError`'s text as the `is_error` result exactly; any other thrown error
   * it sends as `Error: <message>`. This toolkit loads nothing of the SDK, so pass the class to
   * drop that prefix.
   * @default undefined (failures reach the model as `Error: error (kind): …`)
   */
  toolError?: {
    /** Makes the error the runner sends the model: `content` is the failure's text. */
    new (content: string): Error;
  };
}

const runnableToolsOptionKeys = optionKeys<RunnableToolsOptions>({
  budget: true,
  timeoutMs: true,
  toolError: true,
});

/** What `runToolUses` resolves to. */
export interface ToolUsesResult {
  /**
   * The next user turn: one `tool_result` per `tool_use`, in order, failures marked `is_error`.
   * Its content is empty when the response had no tool use. Add any text after the results.
   */
  message: {
    /** Always `user`: tool results go back in a user turn. */
    role: 'user';
    /** One `tool_result` block per `tool_use`, in order. */
    content: ToolResultBlockParam[];
  };
  /** Each call's outcome, in the same order, for logs and metrics (never send these to the model). */
  outcomes: Outcome[];
}

/** A tool of the registry ready for `client.beta.messages.toolRunner({ tools })`. */
export type DispatcherRunnableTool = BetaRunnableTool<unknown>;

/** The registry as Claude tools, and the runners for a turn's tool uses. */
export interface AnthropicToolkit {
  /** The tools for `messages.create`: `{ name, description, input_schema }`. */
  tools(): Tool[];
  /** Runs a response's `tool_use` blocks, all at once (the dispatcher's concurrency layer caps them). */
  runToolUses(response: ResponseWithContent, options?: AnthropicRunOptions): Promise<ToolUsesResult>;
  /**
   * The tools for the SDK's tool runner: identity `parse` (our validation is the one that runs),
   * `run` dispatching with the `tool_use` id and the runner's signal.
   */
  runnableTools(options?: RunnableToolsOptions): DispatcherRunnableTool[];
  /** The wire name the model knows a registry tool by. */
  wireName(toolName: string): string;
  /** The registry name behind a wire name (an unknown one comes back unchanged). */
  toolName(wireName: string): string;
}

/** A Messages response (or a beta one), or an assistant message param with content blocks. */
export type ResponseWithContent =
  | Pick<Message, 'content'>
  | Pick<BetaMessage, 'content'>
  | {
      /** The content blocks; only the `tool_use` ones are run. */
      content: ReadonlyArray<unknown>;
    };

/**
 * The error a runnable tool throws for a failed call when no `toolError` class is given; the
 * runner turns it into an `is_error` result.
 */
export class RunnableToolFailed extends Error {
  /** The dispatch's envelope. */
  readonly outcome: DispatchError;

  /**
   * Wraps a failed outcome; the message is the model-facing text.
   *
   * @example
   * throw new RunnableToolFailed(toToolMessage(outcome), outcome);
   */
  constructor(message: string, outcome: DispatchError) {
    super(message);
    this.name = 'RunnableToolFailed';
    this.outcome = outcome;
  }
}

interface Offered {
  wire: string;
  description: string;
  schema: JsonObjectSchema;
}

/**
 * Builds the Anthropic toolkit, checking tool names (a `TypeError` naming the tools on a
 * pattern, length or collision problem) at once.
 *
 * @example
 * const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: runId });
 * const response = await client.messages.create({ model, max_tokens, messages, tools: claude.tools() });
 * messages.push({ role: 'assistant', content: response.content });
 * if (response.stop_reason === 'tool_use') messages.push((await claude.runToolUses(response, { signal })).message);
 */
export function createAnthropicToolkit(options: AnthropicToolkitOptions): AnthropicToolkit {
  const kit = buildToolkit(options);
  const { names, offered } = kit;
  return {
    tools() {
      return offered.map(({ wire, description, schema }) => ({
        name: wire,
        ...(description === '' ? {} : { description }),
        input_schema: structuredClone(schema),
      }));
    },
    async runToolUses(response, runOptions) {
      if (typeof response !== 'object' || response === null || !Array.isArray(response.content)) {
        throw new TypeError('runToolUses() needs a response (or assistant message) with a content array');
      }
      const {
        options: base,
        scope,
        approvals,
      } = readRunOptions(runOptions, kit.idempotencyScope, 'tool_use ids');
      const uses = (response.content as ReadonlyArray<Record<string, unknown>>).filter(
        (block) => block?.['type'] === 'tool_use',
      );
      const results = await Promise.all(
        uses.map((use) =>
          runOne(
            kit,
            typeof use['name'] === 'string' ? use['name'] : '',
            use['input'],
            use['id'],
            approvalFor(base, approvals, use['id']),
            scope,
          ),
        ),
      );
      return {
        message: {
          role: 'user',
          content: results.map(({ id, outcome, text }) => ({
            type: 'tool_result',
            tool_use_id: id,
            content: text,
            ...(outcome.ok ? {} : { is_error: true }),
          })),
        },
        outcomes: results.map(({ outcome }) => outcome),
      };
    },
    runnableTools: (runnableOptions = {}) => runnableTools(kit, runnableOptions),
    wireName: (toolName) => names.wireName(toolName),
    toolName: (wireName) => names.toolName(wireName),
  };
}

/** The checked options and the tools on offer, read once when the toolkit is built. */
interface Toolkit {
  readonly dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  readonly idempotencyScope: string | undefined;
  readonly keyByCallId: boolean;
  readonly maxMessageLength: number;
  readonly names: NameMap;
  readonly offered: readonly Offered[];
}

function buildToolkit(options: AnthropicToolkitOptions): Toolkit {
  checkToolkitOptions('createAnthropicToolkit()', options, anthropicToolkitOptionKeys);
  const {
    registry,
    dispatcher,
    idempotencyScope,
    keyByCallId = false,
    names: nameOptions = {},
    maxMessageLength = 2000,
  } = options;

  const listings = registry.list();
  const names = createNameMap(
    listings.map((listing) => listing.name),
    { maxLength: 128, ...nameOptions },
  );
  const offered: Offered[] = listings.map((listing) => ({
    wire: names.wireName(listing.name),
    description: listing.description,
    schema: toObjectSchema(listing.inputSchema),
  }));
  return { dispatcher, idempotencyScope, keyByCallId, maxMessageLength, names, offered };
}

function runnableTools(kit: Toolkit, runnableOptions: RunnableToolsOptions): DispatcherRunnableTool[] {
  if (typeof runnableOptions !== 'object' || runnableOptions === null) {
    throw new TypeError(`runnableTools() options must be an object, got ${String(runnableOptions)}`);
  }
  rejectUnknownKeys('runnableTools', runnableOptions, runnableToolsOptionKeys);
  const { toolError } = runnableOptions;
  if (toolError !== undefined && typeof toolError !== 'function')
    throw new TypeError("toolError must be a class (the SDK's ToolError)");
  const { options: base } = readRunOptions(
    { ...pick(runnableOptions, ['budget', 'timeoutMs']) },
    undefined,
    'tool_use ids',
  );
  return kit.offered.map(({ wire, description, schema }) => ({
    name: wire,
    ...(description === '' ? {} : { description }),
    input_schema: structuredClone(schema),
    // Identity: the runner must not validate, so the model reads our schema envelope.
    parse: (input: unknown) => input,
    run: async (args: unknown, context?: BetaToolRunContext) => {
      // The runner may hand over `signal: null`: providerCallOptions keeps only an AbortSignal.
      const { outcome, text } = await runOne(
        kit,
        wire,
        args,
        context?.toolUse?.id,
        base,
        kit.idempotencyScope,
        context?.signal,
      );
      if (outcome.ok) return text;
      throw toolError === undefined ? new RunnableToolFailed(text, outcome) : new toolError(text);
    },
  }));
}

// One call: the provider id as callId, the scoped key, the wire name for the model's texts; the
// answer's outcome is `internal` when the result cannot be rendered, so text and flag agree.
async function runOne(
  kit: Toolkit,
  wire: string,
  input: unknown,
  rawId: unknown,
  base: DispatchOptions,
  scope: string | undefined,
  signal?: unknown,
): Promise<{ id: string; outcome: Outcome; text: string }> {
  const options = providerCallOptions({
    providerId: rawId,
    signal,
    idempotencyScope: scope,
    keyByCallId: kit.keyByCallId,
    idPrefix: 'toolu_td',
    base,
    displayName: wire,
  });
  // Only what this toolkit offered runs: the dispatcher's registry may hold more (tools
  // registered later, and registry names such as `search.web` that are not wire names).
  // A call to any other name still goes through the stack, so every layer sees it `not_found`.
  const name = kit.names.has(wire) ? kit.names.toolName(wire) : notOfferedName(wire);
  const outcome = await dispatchOne(kit.dispatcher, name, input, options);
  return {
    id: options.callId,
    ...toolAnswer(outcome, { maxLength: kit.maxMessageLength, displayName: wire }),
  };
}

// A proxy or a partial stream may hand over the input as JSON text: parse it in the stack.
function dispatchOne(
  dispatcher: Toolkit['dispatcher'],
  name: string,
  input: unknown,
  options: DispatchOptions,
): Promise<Outcome> {
  return typeof input === 'string'
    ? dispatcher.dispatchJson(name, input, options)
    : dispatcher.dispatch(name, input ?? {}, options);
}

function pick<T extends object, K extends keyof T>(object: T, keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (object[key] !== undefined) out[key] = object[key];
  return out;
}

// The turn's options, with the approval given for this tool_use id, if any.
function approvalFor(
  base: DispatchOptions,
  approvals: AnthropicRunOptions['approvals'],
  id: unknown,
): DispatchOptions {
  const approval =
    typeof id === 'string' && approvals !== undefined && Object.hasOwn(approvals, id)
      ? approvals[id]
      : undefined;
  return approval === undefined ? base : { ...base, approval };
}
