/**
 * createOpenAIToolkit: the registry as OpenAI tools, and a turn's tool calls run through the dispatcher.
 * @module
 */

import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import type {
  FunctionTool,
  ResponseCustomToolCallOutput,
  ResponseInputItem,
  ResponseOutputItem,
} from 'openai/resources/responses/responses';
import {
  toolAnswer,
  type Budget,
  type Dispatcher,
  type DispatchOptions,
  type Outcome,
  type ToolAnswer,
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
} from '../../middleware/index.js';
import { notOfferedName } from '../provider/not-offered.js';
import { checkToolkitOptions, readRunOptions } from '../provider/options.js';
import { stripOptionalNulls, toStrictSchema, type NullPlan } from './strict-schema.js';

/** Options for `createOpenAIToolkit`. */
export interface OpenAIToolkitOptions {
  /**
   * The tools to offer; read once, when the toolkit is built. Only these run: a call to any other
   * name (a tool registered later included) goes through the stack under a name no registry
   * holds, so the dispatcher answers it `not_found` and every layer sees it.
   */
  registry: Pick<ToolRegistry, 'list'>;
  /** Runs the calls. */
  dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  /**
   * Makes idempotency keys `${idempotencyScope}:${callId}`: a run or conversation id, unique
   * enough that a call id never repeats inside it. Without it no key is passed (no dedupe)
   * unless `keyByCallId` is set. Override it per batch with the run option.
   */
  idempotencyScope?: string;
  /**
   * Without a scope, use the bare provider call id as the idempotency key. Only safe when ids
   * never repeat across turns and runs.
   * @default false
   */
  keyByCallId?: boolean;
  /**
   * Offer tools in strict mode, each schema rewritten to OpenAI's strict subset (every object
   * closed, every property required, optional ones nullable; the model's nulls for them are
   * removed before validation). Building throws a `TypeError` naming a tool the subset cannot
   * express.
   * @default false
   */
  strict?: boolean;
  /**
   * How registry names become wire names.
   * @default { pattern: /^[a-zA-Z0-9_-]+$/, maxLength: 64, encode: '.' → '__' }
   */
  names?: NameMapOptions;
  /**
   * The longest tool message, in characters (`toToolMessage`'s `maxLength`).
   * @default 2000
   */
  maxMessageLength?: number;
}

const openAIToolkitOptionKeys = optionKeys<OpenAIToolkitOptions>({
  registry: true,
  dispatcher: true,
  idempotencyScope: true,
  keyByCallId: true,
  strict: true,
  names: true,
  maxMessageLength: true,
});

/** Per-batch options of `runChatToolCalls` and `runResponsesCalls`. */
export interface OpenAIRunOptions {
  /** Aborts every call of the batch; `null` counts as none. */
  signal?: AbortSignal | null;
  /**
   * The tool-call budget for the batch: a `createBudget(n)` shared with other batches, or a number
   * of attempts this batch may make in all (made into one budget for the batch).
   */
  budget?: number | Budget;
  /** Per-attempt timeout for every call, overriding each tool's. */
  timeoutMs?: number;
  /** This batch's idempotency scope, instead of the toolkit's. */
  idempotencyScope?: string;
  /**
   * Approvals for calls an `approvalGate` paused, by the provider's call id: the token from the
   * call's `approval_required` outcome, or `{ approvedBy }` when the host asked a person itself.
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

/** What `runChatToolCalls` resolves to. */
export interface ChatToolCallsResult {
  /** One `role: 'tool'` message per tool call, in call order: append them after the assistant message. */
  messages: ChatCompletionToolMessageParam[];
  /** Each call's outcome, in the same order, for logs and metrics (never send these to the model). */
  outcomes: Outcome[];
}

/** A Responses item answering a call. */
export type ResponsesCallOutput = ResponseInputItem.FunctionCallOutput | ResponseCustomToolCallOutput;

/** What `runResponsesCalls` resolves to. */
export interface ResponsesCallsResult {
  /** One output item per `function_call`/`custom_tool_call`, in call order: the next request's input. */
  items: ResponsesCallOutput[];
  /** Each call's outcome, in the same order. */
  outcomes: Outcome[];
}

/** The registry as OpenAI tools, and the runners for a turn's calls. */
export interface OpenAIToolkit {
  /** The tools for Chat Completions: `{ type: 'function', function: { name, description, parameters, strict } }`. */
  chatTools(): ChatCompletionFunctionTool[];
  /** The tools for Responses: `{ type: 'function', name, description, parameters, strict }`. */
  responsesTools(): FunctionTool[];
  /** Runs an assistant message's tool calls, all at once (the dispatcher's concurrency layer caps them). */
  runChatToolCalls(message: ChatMessageWithCalls, options?: OpenAIRunOptions): Promise<ChatToolCallsResult>;
  /** Runs the `function_call` and `custom_tool_call` items of a response's output. */
  runResponsesCalls(
    output: ReadonlyArray<ResponseOutputItem | ResponseInputItem>,
    options?: OpenAIRunOptions,
  ): Promise<ResponsesCallsResult>;
  /** The wire name the model knows a registry tool by. */
  wireName(toolName: string): string;
  /** The registry name behind a wire name (an unknown one comes back unchanged). */
  toolName(wireName: string): string;
}

/** An assistant message as the SDK returns it or as it is sent back. */
export type ChatMessageWithCalls =
  | Pick<ChatCompletionMessage, 'tool_calls'>
  | Pick<ChatCompletionAssistantMessageParam, 'tool_calls'>;

interface Offered {
  wire: string;
  description: string;
  parameters: JsonObjectSchema;
  plan: NullPlan | undefined;
}

/** One provider call, reduced to what running it needs. */
interface Call {
  id: unknown;
  kind: 'function' | 'custom' | 'unsupported';
  wire: string;
  args: unknown;
  type: string;
}

/**
 * Builds the OpenAI toolkit: checks the tool names (a `TypeError` naming the tools on a
 * pattern, length or collision problem) and the schemas (and, with `strict`, their strict
 * rewrite) at once.
 *
 * @example
 * const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: runId });
 * const completion = await client.chat.completions.create({ model, messages, tools: kit.chatTools() });
 * const assistant = completion.choices[0].message;
 * messages.push(assistant, ...(await kit.runChatToolCalls(assistant, { signal })).messages);
 */
export function createOpenAIToolkit(options: OpenAIToolkitOptions): OpenAIToolkit {
  const kit = buildToolkit(options);
  const { names, offered, strict } = kit;
  return {
    chatTools() {
      return [...offered.values()].map(({ wire, description, parameters }) => ({
        type: 'function',
        function: {
          name: wire,
          ...(description === '' ? {} : { description }),
          parameters: structuredClone(parameters),
          strict,
        },
      }));
    },
    responsesTools() {
      return [...offered.values()].map(({ wire, description, parameters }) => ({
        type: 'function',
        name: wire,
        ...(description === '' ? {} : { description }),
        parameters: structuredClone(parameters),
        // Explicit: on the Responses API a function tool is strict unless told otherwise.
        strict,
      }));
    },
    async runChatToolCalls(message, runOptions) {
      if (typeof message !== 'object' || message === null) {
        throw new TypeError(`runChatToolCalls() needs the assistant message, got ${String(message)}`);
      }
      const calls = (message.tool_calls ?? []).map(chatCall);
      const { ids, answers } = await runCalls(kit, calls, runOptions);
      return {
        messages: answers.map(({ text }, i) => ({ role: 'tool', tool_call_id: ids[i]!, content: text })),
        outcomes: answers.map((answer) => answer.outcome),
      };
    },
    async runResponsesCalls(output, runOptions) {
      if (!Array.isArray(output))
        throw new TypeError(`runResponsesCalls() needs a response's output array, got ${String(output)}`);
      const items = (output as ReadonlyArray<Record<string, unknown>>).filter(
        (item) => item?.['type'] === 'function_call' || item?.['type'] === 'custom_tool_call',
      );
      const calls = items.map((item) => responsesCall(kit, item));
      const { ids, answers } = await runCalls(kit, calls, runOptions);
      return {
        items: answers.map(({ text }, i) => responsesOutput(items[i]!, ids[i]!, text)),
        outcomes: answers.map((answer) => answer.outcome),
      };
    },
    wireName: (toolName) => names.wireName(toolName),
    toolName: (wireName) => names.toolName(wireName),
  };
}

/** The checked options and the tools on offer, read once when the toolkit is built. */
interface Toolkit {
  readonly dispatcher: Pick<Dispatcher, 'dispatch' | 'dispatchJson'>;
  readonly idempotencyScope: string | undefined;
  readonly keyByCallId: boolean;
  readonly strict: boolean;
  readonly maxMessageLength: number;
  readonly names: NameMap;
  /** The offered tools, by registry name. */
  readonly offered: ReadonlyMap<string, Offered>;
}

function buildToolkit(options: OpenAIToolkitOptions): Toolkit {
  checkToolkitOptions('createOpenAIToolkit()', options, openAIToolkitOptionKeys);
  const {
    registry,
    dispatcher,
    idempotencyScope,
    keyByCallId = false,
    strict = false,
    names: nameOptions = {},
    maxMessageLength = 2000,
  } = options;
  if (typeof strict !== 'boolean') throw new TypeError(`strict must be a boolean, got ${String(strict)}`);

  const listings = registry.list();
  const names = createNameMap(
    listings.map((listing) => listing.name),
    nameOptions,
  );
  const offered = new Map<string, Offered>();
  for (const listing of listings) {
    const wire = names.wireName(listing.name);
    const base = toObjectSchema(listing.inputSchema);
    const { schema, plan } = strict ? toStrictSchema(base, wire) : { schema: base, plan: undefined };
    offered.set(listing.name, { wire, description: listing.description, parameters: schema, plan });
  }
  return { dispatcher, idempotencyScope, keyByCallId, strict, maxMessageLength, names, offered };
}

// One promise per call (the dispatch's own) and one for the batch: the toolkit's share of a
// turn's cost stays small next to the dispatches (bench/integrations-openai.ts).
async function runCalls(
  kit: Toolkit,
  calls: Call[],
  runOptions: OpenAIRunOptions | undefined,
): Promise<{ ids: string[]; answers: ToolAnswer[] }> {
  const base = readRunOptions(runOptions, kit.idempotencyScope, 'call ids');
  const ids: string[] = [];
  const running: Array<Promise<Outcome> | Outcome> = [];
  for (const call of calls) {
    const options = providerCallOptions({
      providerId: call.id,
      idempotencyScope: base.scope,
      keyByCallId: kit.keyByCallId,
      idPrefix: 'call_td',
      base: base.options,
      displayName: call.wire,
    });
    ids.push(options.callId);
    const { approvals } = base;
    const approval =
      approvals !== undefined && Object.hasOwn(approvals, options.callId)
        ? approvals[options.callId]
        : undefined;
    running.push(runCall(kit, call, approval === undefined ? options : { ...options, approval }));
  }
  const outcomes = await Promise.all(running);
  // A result that cannot be rendered becomes an `internal` outcome, so text and outcome agree.
  const answers = outcomes.map((outcome, i) =>
    toolAnswer(outcome, { maxLength: kit.maxMessageLength, displayName: calls[i]!.wire }),
  );
  return { ids, answers };
}

function runCall(kit: Toolkit, call: Call, dispatchOptions: DispatchOptions): Promise<Outcome> | Outcome {
  const { dispatcher, names } = kit;
  // Only what this toolkit offered runs: the dispatcher's registry may hold more (tools
  // registered later, and registry names such as `search.web` that are not wire names). Any
  // other call (a custom tool's included) still goes through the stack, answered `not_found`.
  const offered = call.kind === 'function' && names.has(call.wire);
  const name = offered ? names.toolName(call.wire) : notOfferedName(call.wire);
  const plan = kit.strict ? kit.offered.get(name)?.plan : undefined;
  if (typeof call.args !== 'string') return dispatcher.dispatch(name, call.args ?? {}, dispatchOptions);
  if (plan !== undefined) {
    const parsed = parseJson(call.args);
    // Text that is not JSON still goes in as text, so its schema failure comes from the stack.
    if (parsed.ok) return dispatcher.dispatch(name, stripOptionalNulls(parsed.value, plan), dispatchOptions);
  }
  return dispatcher.dispatchJson(name, call.args, dispatchOptions);
}

function responsesCall(kit: Toolkit, item: Record<string, unknown>): Call {
  const name = typeof item['name'] === 'string' ? item['name'] : '';
  const namespace =
    typeof item['namespace'] === 'string' && item['namespace'] !== '' ? item['namespace'] : undefined;
  // A call to a tool inside a `namespace` tool: the model knows it as namespace + name.
  const dotted = namespace === undefined ? undefined : `${namespace}.${name}`;
  const wire = dotted !== undefined && kit.offered.has(dotted) ? kit.names.wireName(dotted) : name;
  if (item['type'] === 'custom_tool_call')
    return { id: item['call_id'], kind: 'custom', wire, args: item['input'], type: 'custom_tool_call' };
  return { id: item['call_id'], kind: 'function', wire, args: item['arguments'], type: 'function_call' };
}

function responsesOutput(item: Record<string, unknown>, id: string, text: string): ResponsesCallOutput {
  const caller = item['caller'] === undefined || item['caller'] === null ? {} : { caller: item['caller'] };
  return (
    item['type'] === 'custom_tool_call'
      ? { type: 'custom_tool_call_output', call_id: id, output: text, ...caller }
      : { type: 'function_call_output', call_id: id, output: text, ...caller }
  ) as ResponsesCallOutput;
}

function chatCall(call: unknown): Call {
  const entry = (typeof call === 'object' && call !== null ? call : {}) as Record<string, unknown>;
  const type = typeof entry['type'] === 'string' ? entry['type'] : 'function';
  const fn = entry['function'] as { name?: unknown; arguments?: unknown } | undefined;
  const custom = entry['custom'] as { name?: unknown; input?: unknown } | undefined;
  if (type === 'function' && fn !== undefined) {
    return {
      id: entry['id'],
      kind: 'function',
      wire: typeof fn.name === 'string' ? fn.name : '',
      args: fn.arguments,
      type,
    };
  }
  if (type === 'custom') {
    return {
      id: entry['id'],
      kind: 'custom',
      wire: typeof custom?.name === 'string' ? custom.name : '',
      args: custom?.input,
      type,
    };
  }
  return { id: entry['id'], kind: 'unsupported', wire: type, args: undefined, type };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}
