// OpenAI Responses (`POST /v1/responses`): the request checks, `previous_response_id`, and replies built from a script.

import type {
  Response,
  ResponseCreateParams,
  ResponseOutputItem,
} from 'openai/resources/responses/responses';
import type { HttpReply, Route } from './http.js';
import { counter, isHttpReply, textOf, type Model, type ToolResultView } from './model.js';
import { nameProblem, openaiError, schemaProblem } from './openai-rules.js';

/** A call the scripted model makes. */
export interface ResponsesCallReply {
  /** The call id; generated (`call_<n>`) when omitted. */
  call_id?: string;
  /** The wire name. */
  name: string;
  /** A function call's arguments: a JSON string as the model wrote it, or a value to stringify. @default '{}' */
  arguments?: string | Record<string, unknown>;
  /** The namespace of a call to a tool in a `namespace` tool. */
  namespace?: string;
  /** `custom_tool_call` for a free-form custom tool call (its text in `input`). @default 'function_call' */
  type?: 'function_call' | 'custom_tool_call';
  /** A custom call's free-form input. */
  input?: string;
}

/** What the scripted model answers a Responses request with. */
export interface ResponsesReply {
  /** The assistant's text, as one output message. */
  text?: string;
  /** Calls, in order. */
  calls?: ResponsesCallReply[];
  /** Put a `reasoning` item first, as reasoning models do. @default false */
  reasoning?: boolean;
}

/** The Responses body the scripted model sees: `input` always a list, with any previous response's turns before it. */
export type ResponsesBody = ResponseCreateParams & { input: unknown[] };

/** Options for the Responses route. */
export interface ResponsesRouteOptions {
  /** The scripted model. */
  model: Model<ResponsesBody, ResponsesReply>;
  /** `'per-response'` numbers generated call ids `call_0…` afresh in each reply. */
  callIds: 'unique' | 'per-response';
}

type Item = Record<string, unknown>;

/** The Responses route. */
export function responsesRoute({ model, callIds }: ResponsesRouteOptions): Route {
  const responseId = counter('resp');
  const itemId = counter('item');
  const uniqueCallId = counter('call');
  // What each stored response's conversation was, so `previous_response_id` can continue it.
  const stored = new Map<string, Item[]>();
  let turn = 0;
  return async (raw, headers, signal) => {
    const request = raw as unknown as ResponseCreateParams;
    if (request.stream === true) return openaiError('fake provider: streaming is not emulated', 'stream');
    const own =
      typeof request.input === 'string'
        ? [{ role: 'user', content: request.input }]
        : ((request.input ?? []) as unknown as Item[]);
    let input: Item[] = own;
    if (typeof request.previous_response_id === 'string') {
      const earlier = stored.get(request.previous_response_id);
      if (earlier === undefined) {
        return {
          status: 404,
          body: {
            error: {
              message: `Previous response with id '${request.previous_response_id}' not found.`,
              type: 'invalid_request_error',
              param: 'previous_response_id',
              code: 'previous_response_not_found',
            },
          },
        };
      }
      input = [...earlier, ...own];
    }
    const body = { ...request, input } as ResponsesBody;
    const problem = toolsProblem(request) ?? inputProblem(input);
    if (problem !== undefined) return problem;

    const answer = await model({
      body,
      turn: turn++,
      toolResults: responsesToolResults(input),
      userText: lastUserText(input),
      headers,
      signal,
    });
    if (isHttpReply(answer)) return answer;
    const perResponse = counter('call');
    const nextCallId = callIds === 'per-response' ? perResponse : uniqueCallId;
    const output: ResponseOutputItem[] = [];
    if (answer.reasoning === true) output.push({ type: 'reasoning', id: `rs_${itemId()}`, summary: [] });
    for (const call of answer.calls ?? []) {
      const namespace = call.namespace === undefined ? {} : { namespace: call.namespace };
      output.push(
        call.type === 'custom_tool_call'
          ? {
              type: 'custom_tool_call',
              id: `ctc_${itemId()}`,
              call_id: call.call_id ?? nextCallId(),
              name: call.name,
              input: call.input ?? '',
              ...namespace,
            }
          : {
              type: 'function_call',
              id: `fc_${itemId()}`,
              call_id: call.call_id ?? nextCallId(),
              name: call.name,
              arguments:
                typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
              status: 'completed',
              ...namespace,
            },
      );
    }
    if (answer.text !== undefined) {
      output.push({
        type: 'message',
        id: `msg_${itemId()}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: answer.text, annotations: [] }],
      });
    }
    const id = responseId();
    if (request.store !== false) stored.set(id, [...input, ...(output as unknown as Item[])]);
    const response = {
      id,
      object: 'response',
      created_at: 1_767_225_600,
      status: 'completed',
      model: request.model ?? 'fake',
      output,
      output_text: answer.text ?? '',
      error: null,
      incomplete_details: null,
      instructions: request.instructions ?? null,
      metadata: {},
      parallel_tool_calls: true,
      temperature: 1,
      top_p: 1,
      tool_choice: 'auto',
      tools: request.tools ?? [],
      previous_response_id: request.previous_response_id ?? null,
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 15,
      },
    } as unknown as Response;
    return { status: 200, body: response };
  };
}

// Function tools are strict unless `strict: false` (the Responses API's default is strict).
function toolsProblem(request: ResponseCreateParams): HttpReply | undefined {
  for (const [i, tool] of (request.tools ?? []).entries()) {
    const entry = tool as unknown as Item;
    const members =
      entry['type'] === 'namespace' && Array.isArray(entry['tools']) ? (entry['tools'] as Item[]) : [];
    if (entry['type'] === 'namespace') {
      const problem = nameProblem(entry['name'], `tools[${i}].name`);
      if (problem !== undefined) return problem;
    }
    const functions =
      entry['type'] === 'function'
        ? [[`tools[${i}]`, entry] as const]
        : members.map((member, j) => [`tools[${i}].tools[${j}]`, member] as const);
    for (const [param, fn] of functions) {
      if (fn['type'] !== 'function') continue;
      const problem =
        nameProblem(fn['name'], `${param}.name`) ??
        schemaProblem(String(fn['name']), fn['parameters'], fn['strict'] !== false, `${param}.parameters`);
      if (problem !== undefined) return problem;
    }
    if (entry['type'] === 'custom') {
      const problem = nameProblem(entry['name'], `tools[${i}].name`);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

const outputOf: Readonly<Record<string, string>> = {
  function_call: 'function_call_output',
  custom_tool_call: 'custom_tool_call_output',
};

// Every call answered exactly once, after the call; each run of outputs in the order of its calls.
function inputProblem(input: Item[]): HttpReply | undefined {
  const open: Array<{ callId: string; type: string }> = [];
  const answered = new Set<string>();
  for (const [i, item] of input.entries()) {
    const type = String(item['type'] ?? 'message');
    if (type in outputOf) {
      const problem = nameProblem(item['name'], `input[${i}].name`);
      if (problem !== undefined) return problem;
      open.push({ callId: String(item['call_id']), type });
      continue;
    }
    if (!Object.values(outputOf).includes(type)) continue;
    const callId = String(item['call_id']);
    const index = open.findIndex((call) => call.callId === callId);
    if (index === -1) {
      return answered.has(callId)
        ? openaiError(
            `fake provider rule: input[${i}] answers call_id ${callId} a second time (one output per call)`,
            `input[${i}]`,
          )
        : openaiError(`No tool call found for function call output with call_id ${callId}.`, 'input');
    }
    if (index !== 0) {
      return openaiError(
        `fake provider rule: input[${i}] answers ${callId} before ${open[0]!.callId} (outputs follow call order)`,
        `input[${i}]`,
      );
    }
    if (open[0]!.type !== type.replace(/_output$/, '')) {
      return openaiError(
        `fake provider rule: input[${i}] is a ${type} for a ${open[0]!.type}`,
        `input[${i}]`,
      );
    }
    if (typeof item['output'] !== 'string' && !Array.isArray(item['output'])) {
      return openaiError(
        `Invalid type for 'input[${i}].output': expected one of a string or array of objects.`,
        `input[${i}].output`,
        'invalid_type',
      );
    }
    open.shift();
    answered.add(callId);
  }
  if (open.length > 0)
    return openaiError(`No tool output found for function call ${open[0]!.callId}.`, 'input');
  return undefined;
}

function responsesToolResults(input: Item[]): ToolResultView[] {
  const results: ToolResultView[] = [];
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i]!;
    if (!Object.values(outputOf).includes(String(item['type']))) break;
    results.unshift({ id: String(item['call_id']), content: textOf(item['output']), isError: false });
  }
  return results;
}

function lastUserText(input: Item[]): string | undefined {
  const user = [...input].reverse().find((item) => item['role'] === 'user');
  return user === undefined ? undefined : textOf(user['content']);
}
