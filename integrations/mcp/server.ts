/**
 * Serving a registry over MCP: tools/list from the registry, tools/call through the dispatcher.
 * @module
 */

import {
  Server,
  type CallToolResult,
  type Implementation,
  type McpServerFactory,
  type ServerContext,
  type Tool as McpTool,
} from '@modelcontextprotocol/server';
import {
  DispatchError,
  toToolMessage,
  type Dispatcher,
  type DispatchOptions,
  type ApprovalGate,
  type DispatchSuccess,
  type Outcome,
  type ToolListing,
  type ToolRegistry,
} from '../../index.js';
import { toObjectSchema, optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { refusedArgs } from '../../middleware/internal-kit.js';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  approvalMetaKey,
  envelopeOf,
  errorMetaKey,
  idempotencyKeyMetaKey,
  receiptMetaKey,
  type McpReceipt,
} from './envelope.js';
import {
  approvalQuestion,
  approvalRetryOf,
  canBeAsked,
  withApprovalState,
  type ApprovalAnswer,
  type ApprovalRetry,
} from './approval-round.js';
import { inputAnswerOf, withInputRound, type InputRound } from './input-required.js';
import { unsendable } from './sendable.js';
import { McpTasks, tasksExtension, type McpTasksOptions } from './tasks.js';
import { traceMetaOf, withTraceMeta } from './trace-context.js';
import { v1, type V1Sdk, type V1Server } from './v1-sdk.js';

/** What MCP lets a tool say about itself beyond the registry's fields; all optional hints. */
export interface McpToolHints {
  /** A human-readable title. */
  title?: string;
  /** The tool does not change its environment. */
  readOnlyHint?: boolean;
  /** The tool may destroy data (MCP assumes `true` when unset). */
  destructiveHint?: boolean;
  /** The tool talks to the world outside (MCP assumes `true` when unset). */
  openWorldHint?: boolean;
  /** A JSON Schema of the tool's `structuredContent`; the client then requires and checks it. */
  outputSchema?: McpTool['outputSchema'];
  /**
   * Annotations served as they are, for passing another server's on (the proxy serves its
   * upstream's this way): `idempotentHint` is then theirs, not the registry's `idempotent`, and
   * the hint fields above win over theirs.
   * @default none (`idempotentHint` is the tool's `idempotent`)
   */
  annotations?: McpTool['annotations'];
}

const mcpToolHintKeys = optionKeys<McpToolHints>({
  title: true,
  readOnlyHint: true,
  destructiveHint: true,
  openWorldHint: true,
  outputSchema: true,
  annotations: true,
});

/** Options shared by `createMcpServer`, `registerMcpTools` and `toMcpTools`. */
export interface McpToolsOptions {
  /** The tools to serve. */
  registry: Pick<ToolRegistry, 'list'>;
  /**
   * Names on the wire, by registry name; tools missing from it keep their registry name. Read at
   * every request, so a live map (an `importMcpTools` result's `names`) stays current.
   * @default new Map() (registry names as they are)
   */
  names?: ReadonlyMap<string, string>;
  /**
   * Title, annotations and output schema per tool, by registry name.
   * @default {} (only `idempotentHint`, from the registry)
   */
  hints?: Readonly<Record<string, McpToolHints>> | ((toolName: string) => McpToolHints | undefined);
}

const mcpToolsOptionKeys = optionKeys<McpToolsOptions>({ registry: true, names: true, hints: true });

/** Options for `registerMcpTools`. */
export interface RegisterMcpToolsOptions extends McpToolsOptions {
  /** Runs every `tools/call`. */
  dispatcher: Pick<Dispatcher, 'dispatch'>;
  /**
   * Tools per `tools/list` page; longer lists are paginated with `nextCursor`.
   * @default 100
   */
  pageSize?: number;
  /**
   * The longest text of a failed call, in characters (the model reads it).
   * @default 2000
   */
  maxMessageLength?: number;
  /**
   * Turns a successful result into the call's result. What it returns is checked before it is
   * sent: a result that throws here, or that no transport can write as JSON (nested more than
   * 1000 levels deep, circular, a BigInt), is answered as an `internal` failure instead.
   * @default toCallToolResult (JSON text, and `structuredContent` for a plain object)
   */
  formatResult?: (result: unknown, toolName: string) => CallToolResult;
  /**
   * Dispatch options added to every call (a shared `budget`, a `timeoutMs`); the call's own id,
   * signal, key and progress always win.
   * @default {}
   */
  dispatchOptions?: Pick<DispatchOptions, 'budget' | 'timeoutMs'>;
  /**
   * Serve MCP Tasks (2026-07-28 clients that declare `io.modelcontextprotocol/tasks`): a call of
   * a tool with `task: true`, or whose timeout exceeds `thresholdMs`, answers with a task handle
   * and runs on; `tasks/get` and `tasks/cancel` read and stop it. Other clients get the result.
   * @default none (every call answers with its result)
   */
  tasks?: McpTasksOptions;
  /**
   * The stack's `approvalGate()`: a call it pauses is put to the user (one boolean `approve`),
   * by elicitation on a 2025-era connection and by an `input_required` round on 2026-07-28, and
   * runs once approved; a decline is `approval_denied`. Where nobody can be asked (no
   * elicitation, a task run, a dismissed question, a failed ask) the call stays
   * `approval_required`, answered `isError` with the token in `_meta["tool-dispatcher/approval"]`
   * and `notAsked` saying why; the token stays pending for a person to approve.
   * @default undefined (paused calls are answered `isError`)
   */
  approvals?: Pick<ApprovalGate, 'approve' | 'deny'>;
}

const registerMcpToolsOptionKeys = optionKeys<RegisterMcpToolsOptions>({
  registry: true,
  names: true,
  hints: true,
  dispatcher: true,
  pageSize: true,
  maxMessageLength: true,
  formatResult: true,
  dispatchOptions: true,
  tasks: true,
  approvals: true,
});

/** Options for `createMcpServer`. */
export interface CreateMcpServerOptions extends RegisterMcpToolsOptions {
  /** The server's name and version, as `initialize` reports them. */
  info: Implementation;
  /** Instructions for the client's model, as `initialize` reports them. */
  instructions?: string;
}

const dispatchOptionsKeys = optionKeys<NonNullable<RegisterMcpToolsOptions['dispatchOptions']>>({
  budget: true,
  timeoutMs: true,
});

const createMcpServerOptionKeys = optionKeys<CreateMcpServerOptions>({
  registry: true,
  names: true,
  hints: true,
  dispatcher: true,
  pageSize: true,
  maxMessageLength: true,
  formatResult: true,
  dispatchOptions: true,
  tasks: true,
  approvals: true,
  info: true,
  instructions: true,
});

/** Options for `toCallToolResult`. */
export interface CallToolResultOptions {
  /**
   * The longest text of a failure, in characters.
   * @default 2000
   */
  maxLength?: number;
}

const defaultPageSize = 100;

/**
 * Makes a low-level MCP `Server` (v2, `@modelcontextprotocol/server`) that lists the registry's
 * tools and runs each `tools/call` through the dispatcher; connect it to one transport (a v1
 * transport works too) for a 2025-era connection, or hand `createMcpServerFactory` to
 * `serveStdio`/`createMcpHandler` to serve both revisions.
 *
 * @example
 * const server = createMcpServer({ registry, dispatcher, info: { name: 'billing', version: '1.0.0' } });
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(options: CreateMcpServerOptions): Server {
  requireObject('createMcpServer', options, createMcpServerOptionKeys);
  const { info, instructions } = options;
  if (
    typeof info !== 'object' ||
    info === null ||
    typeof info.name !== 'string' ||
    typeof info.version !== 'string'
  ) {
    throw new TypeError('createMcpServer() info must be { name: string, version: string }');
  }
  if (instructions !== undefined && typeof instructions !== 'string') {
    throw new TypeError('createMcpServer() instructions must be a string');
  }
  const server = new Server(info, {
    capabilities: { tools: { listChanged: true } },
    ...(instructions === undefined ? {} : { instructions }),
  });
  registerTools(server, options);
  return server;
}

/**
 * A server factory for the v2 serving entries: `serveStdio(factory)` and
 * `createMcpHandler(factory)` serve 2025-11-25 and 2026-07-28 clients from it, a fresh `Server`
 * per connection or request, all sharing one dispatcher (and so one idempotency store).
 *
 * @example
 * serveStdio(createMcpServerFactory({ registry, dispatcher, info: { name: 'billing', version: '2.0.0' } }));
 */
export function createMcpServerFactory(options: CreateMcpServerOptions): McpServerFactory {
  // Built once, so a bad option fails here and not at the first connection.
  createMcpServer(options);
  return function mcpServer(context) {
    const server = createMcpServer(options);
    if (context?.requestInfo !== undefined) servesOneHttpRequest(server);
    return server;
  };
}

// Servers made for one HTTP request: a closed stream there is how a client cancels.
const perRequest = new WeakSet<object>();

/**
 * Marks a server as made for one HTTP request (`createMcpHandler` gives the factory its
 * `requestInfo`): a keyed call whose stream closes there loses its response, not its run, so a
 * re-issue with the key joins the run or gets its stored result.
 *
 * @example
 * const server = createMcpServer(options);
 * if (context?.requestInfo !== undefined) servesOneHttpRequest(server);
 */
export function servesOneHttpRequest(server: Server): void {
  perRequest.add(server);
}

/**
 * Adds `tools/list` and `tools/call` handlers for the registry to a low-level MCP `Server` you
 * already have (v2, or v1's `@modelcontextprotocol/sdk/server` one); call it before
 * `server.connect(...)`.
 *
 * @example
 * const server = new Server({ name: 'billing', version: '1.0.0' }, { capabilities: {} });
 * registerMcpTools(server, { registry, dispatcher });
 * await server.connect(transport);
 */
export function registerMcpTools(server: Server | V1Server, options: RegisterMcpToolsOptions): void {
  requireObject('registerMcpTools', options, registerMcpToolsOptionKeys);
  registerTools(server, options);
}

// `createMcpServer` checks its own (wider) set of keys, then adds the handlers here.
function registerTools(server: Server | V1Server, options: RegisterMcpToolsOptions): void {
  const v2 = server instanceof Server;
  if (!v2 && (v1 === undefined || !(server instanceof v1.Server))) {
    throw new TypeError(
      'registerMcpTools() needs a low-level Server from @modelcontextprotocol/server (or @modelcontextprotocol/sdk/server)',
    );
  }
  const handlers = toolHandlers(options);
  if (server.transport !== undefined) {
    throw new TypeError(
      'registerMcpTools() must run before server.connect(): MCP capabilities are fixed once connected',
    );
  }
  if (v2) return registerOnV2(server, handlers);
  server.registerCapabilities({ tools: {} });
  const { schemas } = v1 as V1Sdk;
  const legacy = server as V1Server;
  legacy.setRequestHandler(schemas.ListToolsRequestSchema, (request) =>
    handlers.list(request.params?.cursor),
  );
  legacy.setRequestHandler(schemas.CallToolRequestSchema, (request, extra) =>
    handlers.call(request.params as CallToolParams, {
      requestId: extra.requestId,
      signal: extra.signal,
      notify: (notification) => extra.sendNotification(notification as never),
      asker: legacy as unknown as Asker,
    }),
  );
}

const taskIdParams = { params: z.looseObject({ taskId: z.string() }) };

function registerOnV2(server: Server, handlers: ToolHandlers): void {
  const { tasks } = handlers;
  // Extensions are advertised in the capabilities' `extensions` map (the SDK types leave it out).
  const extensions = tasks === undefined ? {} : { extensions: { [tasksExtension]: {} } };
  server.registerCapabilities({ tools: {}, ...extensions } as Parameters<Server['registerCapabilities']>[0]);
  // The SDK types the envelope as an empty record; its keys are the spec's.
  const capabilitiesOf = (ctx: ServerContext): unknown =>
    (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[
      'io.modelcontextprotocol/clientCapabilities'
    ];
  server.setRequestHandler('tools/list', (request) => handlers.list(request.params?.cursor));
  server.setRequestHandler('tools/call', (request, ctx) =>
    handlers.call(request.params, {
      requestId: ctx.mcpReq.id,
      signal: ctx.mcpReq.signal,
      notify: (notification) => ctx.mcpReq.notify(notification),
      clientCapabilities: capabilitiesOf(ctx),
      asker: server as unknown as Asker,
      keyedRunsOn: perRequest.has(server),
      // Only a 2026-07-28 request (it carries the envelope) can be answered `input_required`.
      ...(ctx.mcpReq.envelope === undefined
        ? {}
        : { retry: { inputResponses: ctx.mcpReq.inputResponses, requestState: ctx.mcpReq.requestState() } }),
    }),
  );
  if (tasks === undefined) return;
  server.setRequestHandler(
    'tasks/get',
    taskIdParams,
    async (params, ctx) =>
      ({ ...(await tasks.get(params.taskId, capabilitiesOf(ctx))) }) as Record<string, unknown>,
  );
  server.setRequestHandler('tasks/cancel', taskIdParams, (params, ctx) =>
    tasks.cancel(params.taskId, capabilitiesOf(ctx)),
  );
}

/** The `tools/call` params the handlers read. */
interface CallToolParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  _meta?: Record<string, unknown> | undefined;
}

/** The parts of an SDK's request context a call uses, whichever SDK line received it. */
interface CallRequest {
  requestId: string | number;
  signal: AbortSignal;
  notify(notification: { method: 'notifications/progress'; params: Record<string, unknown> }): Promise<void>;
  /** The client capabilities a 2026-07-28 request declares in its `_meta` envelope. */
  clientCapabilities?: unknown;
  /** The server that received the call, to put a paused call to the user by elicitation. */
  asker?: Asker;
  /**
   * Whether a keyed call runs on when `signal` aborts (a closed HTTP stream): the key's
   * re-issue then joins the run or gets its stored result, so the tool runs once.
   */
  keyedRunsOn?: boolean;
  /**
   * Set for a 2026-07-28 request, which an upstream's `input_required` can be passed back to:
   * what its retry carried, if it is one.
   */
  retry?: { inputResponses?: Record<string, unknown> | undefined; requestState?: unknown };
}

// Never aborts: the run of a keyed call whose HTTP stream closed ends by its own deadline.
const runsOn = new AbortController().signal;

/** What both SDK lines' servers offer to ask the user something. */
interface Asker {
  getClientCapabilities(): { elicitation?: unknown } | undefined;
  elicitInput(
    params: { message: string; requestedSchema: Record<string, unknown> },
    options?: { signal?: AbortSignal },
  ): Promise<{ action: string; content?: Record<string, unknown> | undefined }>;
}

/** The call settings, with the approval gate and the registry a paused or cut call needs. */
type ServeSettings = CallSettings & {
  readonly approvals: Pick<ApprovalGate, 'approve' | 'deny'> | undefined;
  readonly registry: RegisterMcpToolsOptions['registry'];
};

interface ToolHandlers {
  list(cursor: string | undefined): { tools: McpTool[]; nextCursor?: string };
  call(params: CallToolParams, request: CallRequest): Promise<CallToolResult>;
  tasks: McpTasks | undefined;
}

// One Tasks service per `tasks` options object: every server a factory makes shares its runs.
const tasksByOptions = new WeakMap<McpTasksOptions, McpTasks>();

function tasksFor(options: McpTasksOptions | undefined): McpTasks | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('registerMcpTools() tasks must be an object');
  }
  let tasks = tasksByOptions.get(options);
  if (tasks === undefined) {
    try {
      tasks = new McpTasks(options);
    } catch (error) {
      throw new TypeError(`registerMcpTools() ${(error as Error).message}`);
    }
    tasksByOptions.set(options, tasks);
  }
  return tasks;
}

function toolHandlers(options: RegisterMcpToolsOptions): ToolHandlers {
  const lookup = toolLookup('registerMcpTools', options);
  const { registry, approvals } = options;
  if (
    approvals !== undefined &&
    (typeof approvals?.approve !== 'function' || typeof approvals.deny !== 'function')
  ) {
    throw new TypeError('registerMcpTools() approvals must be an approvalGate()');
  }
  const settings: ServeSettings = { ...callSettings(options), approvals, registry };
  const { pageSize } = settings;
  const tasks = tasksFor(options.tasks);
  return {
    tasks,
    list(cursor) {
      const tools = lookup.tools();
      const start = offsetOf(cursor);
      if (start > tools.length) throw invalidParams(`Invalid cursor: ${String(cursor)}`);
      const end = start + pageSize;
      return end < tools.length
        ? { tools: tools.slice(start, end), nextCursor: cursorFor(end) }
        : { tools: tools.slice(start) };
    },
    call: (params, request) => callTool(params, request, lookup, settings, tasks),
  };
}

async function callTool(
  params: CallToolParams,
  request: CallRequest,
  lookup: Lookup,
  settings: ServeSettings,
  tasks: McpTasks | undefined,
): Promise<CallToolResult> {
  const { name: wireName, arguments: args = {}, _meta: meta } = params;
  const toolName = lookup.toolName(wireName);
  const givenKey = meta?.[idempotencyKeyMetaKey];
  const givenApproval = meta?.[approvalMetaKey];
  const badMeta =
    givenKey !== undefined && (typeof givenKey !== 'string' || givenKey === '')
      ? `_meta["${idempotencyKeyMetaKey}"] must be a non-empty string, got ${JSON.stringify(givenKey) ?? typeof givenKey}`
      : givenApproval !== undefined && (typeof givenApproval !== 'string' || givenApproval === '')
        ? `_meta["${approvalMetaKey}"] must be the approval token, a string`
        : undefined;
  if (badMeta !== undefined) {
    // Refused through the stack (its schema step answers), so every layer sees the call; it
    // carries neither the bad key nor the bad token, and never becomes a task.
    const refused = refusedArgs(badMeta) as Call['args'];
    const call: Call = {
      toolName,
      wireName,
      args: refused,
      key: undefined,
      meta,
      approval: undefined,
      receipt: false,
    };
    return runCall(call, request, settings);
  }
  const key = givenKey as string | undefined;
  const approval = givenApproval as string | undefined;
  const call: Call = { toolName, wireName, args, key, meta, approval, receipt: key !== undefined };
  const listing = tasks === undefined ? undefined : lookup.listing(toolName);
  if (tasks === undefined || listing === undefined || !tasks.wants(listing, request.clientCapabilities)) {
    return runCall(call, request, settings);
  }
  const handle = await tasks.start(
    wireName,
    taskKeyOf(key, approval),
    (signal, taskId) =>
      runCall(
        // The run keeps the caller's trace context only: a progress token ends with the request.
        // It carries the caller's token and key, so the gate binds the one to the other as on a
        // synchronous call: a keyless pause is resumed by its token alone, as documented.
        { ...call, meta: traceMetaOf(meta) },
        { requestId: taskId, signal, notify: async () => {} },
        settings,
      ),
    args,
  );
  if (handle === 'conflict') {
    const used = key === undefined ? 'The approval token' : `Idempotency key "${key}"`;
    const refusal = new DispatchError(
      'idempotency_conflict',
      `${used} was already used for a task of "${wireName}" with different args`,
    );
    return toCallToolResult(refusal, { maxLength: settings.maxMessageLength });
  }
  // The SDK's result type knows no handles; the wire shape is the Tasks extension's.
  return handle as unknown as CallToolResult;
}

// The key a task is stored under: the caller's (with the approval token it resumes, so the
// approved run is a task of its own and a redelivery of the token finds it), else the token, else
// one of ours, so that a re-issue finds its task.
function taskKeyOf(key: string | undefined, approval: string | undefined): string {
  if (approval === undefined) return key ?? `td-${randomUUID()}`;
  return key === undefined ? `approval:${approval}` : `${key}\u0000approval:${approval}`;
}

interface Call {
  toolName: string;
  wireName: string;
  args: Record<string, unknown>;
  key: string | undefined;
  meta: Record<string, unknown> | undefined;
  approval: string | undefined;
  /** Whether the result carries `_meta[receiptMetaKey]` (the caller sent the key). */
  receipt: boolean;
}

async function runCall(call: Call, request: CallRequest, settings: ServeSettings): Promise<CallToolResult> {
  const { dispatcher, dispatchOptions, approvals } = settings;
  const { toolName, wireName, args, key, meta, approval } = call;
  const progressToken = meta?.['progressToken'];
  // Progress notes go out in order, and all before the response: the client forgets the
  // token once it has the result, and a note after that is an error on its side.
  let progressSent: Promise<void> | undefined;
  // The call's own fields first and the shared options spread after them: on Node 20's V8 a
  // spread followed by more properties gets a fresh hidden class per object. Ours win.
  const callId = `mcp-${String(request.requestId)}`; // request ids restart per connection: never a key
  const signal = key !== undefined && request.keyedRunsOn === true ? runsOn : request.signal;
  const options: DispatchOptions = {
    callId,
    signal,
    displayName: wireName,
    ...dispatchOptions,
  };
  options.callId = callId;
  options.signal = signal;
  options.displayName = wireName;
  if (key !== undefined) options.idempotencyKey = key;
  if (approval !== undefined) options.approval = approval;
  if (typeof progressToken === 'string' || typeof progressToken === 'number') {
    options.onProgress = ({ progress, total, message }) => {
      const params = {
        progressToken,
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      };
      progressSent = (progressSent ?? Promise.resolve())
        .then(() => request.notify({ method: 'notifications/progress', params }))
        .catch(() => {
          // A progress note that cannot be sent (the connection went away) is not worth failing the call.
        });
    };
  }
  // The caller's trace context rides along, so an imported tool's upstream call continues it.
  const trace = traceMetaOf(meta);
  const received = inputRoundOf(request);
  // The retry of our own approval question: its answer and state are ours, the rest the tools'.
  const ours = approvals === undefined ? undefined : approvalRetryOf(received);
  const round = ours?.round ?? received;
  if (ours !== undefined && approval === undefined) options.approval = ours.token;
  const run = (given: DispatchOptions) =>
    withTraceMeta(trace, () => withInputRound(round, () => dispatcher.dispatch(toolName, args, given)));
  let outcome: Outcome = await run(options);
  const paused = outcome.ok ? undefined : outcome.approval;
  let unasked: string | undefined;
  if (paused !== undefined && approvals !== undefined) {
    const put = await putToTheUser({ approvals, wireName, paused, request, ours, round: received });
    if ('question' in put) return put.question;
    if (put.answered) outcome = await run({ ...options, approval: paused.token });
    else unasked = put.unasked;
  }
  // An upstream asked our caller for input: that answer goes back as it is (with the approval
  // it runs under, if any), and the failure it ran as left nothing stored under the key, so the
  // retry runs.
  const asked = outcome.ok || round === undefined ? undefined : inputAnswerOf(outcome);
  if (asked !== undefined) {
    const token = approval === undefined ? options.approval : undefined;
    return (typeof token === 'string' ? withApprovalState(asked, token) : asked) as CallToolResult;
  }
  if (progressSent !== undefined) await progressSent;
  const result = answerOf(outcome, call, settings, request.retry !== undefined);
  const answered = unasked === undefined ? result : notAsked(result, unasked);
  return key !== undefined && call.receipt ? withReceipt(answered, key, outcome) : answered;
}

/** What putting a paused call to the user came to. */
type Put = { question: CallToolResult } | { answered: true } | { answered: false; unasked: string };

// Puts a paused call to the user however the request allows: a 2026-07-28 one by an
// `input_required` question (or, on its retry, by taking the answer), a 2025 one by elicitation.
// Only a person's answer approves or denies the token; a call nobody could ask stays paused.
async function putToTheUser(at: {
  approvals: Pick<ApprovalGate, 'approve' | 'deny'>;
  wireName: string;
  paused: { token: string; reason: string };
  request: CallRequest;
  ours: ApprovalRetry | undefined;
  round: InputRound | undefined;
}): Promise<Put> {
  const { approvals, wireName, paused, request, ours, round } = at;
  // The retry's token counts only when the gate paused this very call on it (bound to its tool,
  // args and key): a state naming another call's token asks anew.
  if (ours?.answer !== undefined && ours.token === paused.token) {
    return settle(approvals, paused.token, ours.answer);
  }
  if (round !== undefined) {
    if (canBeAsked(round.capabilities)) {
      return { question: approvalQuestion(approvalElicitation(wireName, paused), paused.token) };
    }
    return {
      answered: false,
      unasked: 'the client declares no form elicitation, which 2026-07-28 asks through input_required',
    };
  }
  const { asker } = request;
  if (asker === undefined) return { answered: false, unasked: 'a task has no client to ask while it runs' };
  if (asker.getClientCapabilities()?.elicitation === undefined) {
    return { answered: false, unasked: 'the client declares no elicitation' };
  }
  const answer = await askTheUser(asker, wireName, paused, request.signal);
  if (typeof answer === 'object') return { answered: false, unasked: answer.failed };
  return settle(approvals, paused.token, answer);
}

async function settle(
  approvals: Pick<ApprovalGate, 'approve' | 'deny'>,
  token: string,
  answer: ApprovalAnswer,
): Promise<Put> {
  if (answer === 'dismissed') {
    return { answered: false, unasked: 'the user dismissed the question without an answer' };
  }
  if (answer === 'approve') await approvals.approve(token, { by: 'mcp-client', channel: 'mcp' });
  else await approvals.deny(token, 'the user declined it', { by: 'mcp-client', channel: 'mcp' });
  return { answered: true };
}

// A paused call nobody could ask stays `approval_required`; its answer says why nobody was asked,
// in the text and beside the token.
function notAsked(result: CallToolResult, why: string): CallToolResult {
  const ticket = result._meta?.[approvalMetaKey];
  return {
    ...result,
    content: [
      ...result.content,
      {
        type: 'text',
        text: `It was not put to the user: ${why}. It stays paused until a person approves it.`,
      },
    ],
    _meta: {
      ...result._meta,
      ...(typeof ticket === 'object' && ticket !== null
        ? { [approvalMetaKey]: { ...ticket, notAsked: why } }
        : {}),
    },
  };
}

function inputRoundOf(request: CallRequest): InputRound | undefined {
  const { retry } = request;
  if (retry === undefined) return undefined;
  const { inputResponses, requestState } = retry;
  return {
    inputResponses,
    requestState: typeof requestState === 'string' ? requestState : undefined,
    capabilities: request.clientCapabilities,
  };
}

// The receipt rides on a copy: a replayed result may be the very object the store keeps.
function withReceipt(result: CallToolResult, key: string, outcome: Outcome): CallToolResult {
  // attempts is 0 only when the idempotency layer answered from another execution.
  const replayed = outcome.ok && outcome.attempts === 0 && outcome.reconciled === undefined;
  const receipt: McpReceipt = { key, replayed };
  return { ...result, _meta: { ...result._meta, [receiptMetaKey]: receipt } };
}

/** MCP's rate-limit error code (SEP-3304), answered to 2026-07-28 requests for `rate_limited`. */
const rateLimitedCode = -32023;

// `modern`: the request came on 2026-07-28 (with its `_meta` envelope), where our own rate limit
// is the protocol's `-32023` error; an older client gets the `isError` result it always had.
function answerOf(outcome: Outcome, call: Call, settings: ServeSettings, modern: boolean): CallToolResult {
  const { maxMessageLength, formatResult, registry } = settings;
  const { toolName, wireName } = call;
  if (outcome.ok && outcome.modelCopy !== undefined && formatResult === defaultFormat) {
    return cutResult(outcome, declaresOutput(registry, toolName));
  }
  if (outcome.ok) return sendableSuccess(outcome, toolName, wireName, formatResult, maxMessageLength);
  if (outcome.kind === 'not_found') {
    // A plain error with a code: the SDK sends its message as is (McpError would prefix it twice).
    throw Object.assign(new Error(`Unknown tool: ${wireName}`), {
      code: -32602,
      data: outcome.toJsonRpcError().data,
    });
  }
  if (outcome.kind === 'rate_limited' && modern) {
    // SEP-3304 requires `retryAfterMs`; a limit that named no wait may be tried again at once.
    const rpc = outcome.toJsonRpcError();
    const { retryAfterMs = 0, ...data } = rpc.data;
    throw Object.assign(new Error(rpc.message), {
      code: rateLimitedCode,
      data: { retryAfterMs, ...data },
    });
  }
  return toCallToolResult(outcome, { maxLength: maxMessageLength });
}

// The question a paused call is put to the user with: one boolean `approve`.
function approvalElicitation(
  wireName: string,
  ticket: { token: string; reason: string },
): { message: string; requestedSchema: Record<string, unknown> } {
  return {
    message: `Allow "${wireName}" to run? It needs approval: ${ticket.reason}.`,
    requestedSchema: {
      type: 'object',
      properties: {
        approve: { type: 'boolean', title: 'Approve', description: `Run "${wireName}" now` },
      },
      required: ['approve'],
    },
  };
}

// Asks a 2025-era client by elicitation: an accepted `approve: true` is a yes, an accepted no or
// a decline a no, a cancel no answer. A request that fails (the connection went, the client
// refused it) is no answer either: nobody declined, so the token stays pending.
async function askTheUser(
  server: Asker,
  wireName: string,
  ticket: { token: string; reason: string },
  signal: AbortSignal,
): Promise<ApprovalAnswer | { failed: string }> {
  let answer: { action: string; content?: Record<string, unknown> | undefined };
  try {
    answer = await server.elicitInput(approvalElicitation(wireName, ticket), { signal });
  } catch {
    // The error's own text stays out: it would reach the model unredacted.
    return { failed: 'the elicitation request to the client failed' };
  }
  if (answer.action === 'accept') return answer.content?.['approve'] === true ? 'approve' : 'deny';
  return answer.action === 'decline' ? 'deny' : 'dismissed';
}

type CallSettings = Required<
  Pick<
    RegisterMcpToolsOptions,
    'dispatcher' | 'pageSize' | 'maxMessageLength' | 'formatResult' | 'dispatchOptions'
  >
>;

function callSettings(options: RegisterMcpToolsOptions): CallSettings {
  const {
    dispatcher,
    pageSize = defaultPageSize,
    maxMessageLength = 2000,
    formatResult = defaultFormat,
    dispatchOptions = {},
  } = options;
  if (typeof dispatcher !== 'object' || dispatcher === null || typeof dispatcher.dispatch !== 'function') {
    throw new TypeError('registerMcpTools() dispatcher must be a Dispatcher');
  }
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new TypeError(`registerMcpTools() pageSize must be an integer >= 1, got ${String(pageSize)}`);
  }
  if (maxMessageLength !== Infinity && (!Number.isInteger(maxMessageLength) || maxMessageLength < 1)) {
    throw new TypeError(
      `registerMcpTools() maxMessageLength must be an integer >= 1, got ${String(maxMessageLength)}`,
    );
  }
  if (typeof formatResult !== 'function')
    throw new TypeError('registerMcpTools() formatResult must be a function');
  if (typeof dispatchOptions !== 'object' || dispatchOptions === null) {
    throw new TypeError('registerMcpTools() dispatchOptions must be an object');
  }
  rejectUnknownKeys('registerMcpTools() dispatchOptions', dispatchOptions, dispatchOptionsKeys);
  return { dispatcher, pageSize, maxMessageLength, formatResult, dispatchOptions };
}

// Every call gets an answer: a response the transport cannot write is never sent, and the
// client would wait until its own timeout for it.
function sendableSuccess(
  outcome: DispatchSuccess,
  toolName: string,
  wireName: string,
  formatResult: (result: unknown, toolName: string) => CallToolResult,
  maxLength: number,
): CallToolResult {
  let problem: string | undefined;
  try {
    const result = formatResult(outcome.result, toolName);
    // The default rendering is plain JSON of bounded depth by construction.
    problem = formatResult === defaultFormat ? undefined : unsendable(result);
    if (problem === undefined) return result;
  } catch (error) {
    problem = `formatting it failed (${error instanceof Error ? error.message : String(error)})`;
  }
  const failure = new DispatchError('internal', `The result of "${wireName}" cannot be sent: ${problem}`, {
    attempts: outcome.attempts,
  });
  return toCallToolResult(failure, { maxLength });
}

/**
 * The registry's tools as MCP `Tool` entries: a root-object `inputSchema`, `idempotentHint` from
 * `idempotent`, and the optional hints you pass.
 *
 * @example
 * const tools = toMcpTools({ registry, hints: { 'db.get_user': { readOnlyHint: true } } });
 */
export function toMcpTools(options: McpToolsOptions): McpTool[] {
  requireObject('toMcpTools', options, mcpToolsOptionKeys);
  return toolLookup('toMcpTools', options).tools();
}

/**
 * A dispatch outcome as an MCP `CallToolResult`: a success as JSON text (plus `structuredContent`
 * for a plain object), a failure as `isError: true` with the model-facing text and the sanitised
 * envelope under `_meta["tool-dispatcher/error"]`.
 *
 * @example
 * const result = toCallToolResult(await dispatcher.dispatch('search.web', { query: 'mcp' }));
 */
export function toCallToolResult(outcome: Outcome, options: CallToolResultOptions = {}): CallToolResult {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('toCallToolResult() options must be an object');
  }
  const { maxLength = 2000 } = options;
  if (outcome.ok)
    return outcome.modelCopy === undefined ? defaultFormat(outcome.result) : cutResult(outcome, false);
  const meta: Record<string, unknown> = { [errorMetaKey]: envelopeOf(outcome) };
  // The token travels beside the text, never in it: the model must not approve its own call.
  const { approval } = outcome;
  if (approval !== undefined) {
    meta[approvalMetaKey] = { token: approval.token, reason: approval.reason, expiresAt: approval.expiresAt };
  }
  return {
    content: [{ type: 'text', text: toToolMessage(outcome, { maxLength }) }],
    isError: true,
    _meta: meta,
  };
}

// A success the output guard cut: the model copy as the text; the whole value as structured
// content only when the tool declares an output schema (a client then requires it).
function cutResult(outcome: DispatchSuccess, structured: boolean): CallToolResult {
  const text = outcome.modelCopy?.text ?? '';
  if (!structured || !isPlainObject(outcome.result)) return { content: [{ type: 'text', text }] };
  const whole = toToolMessage({ ok: true, result: outcome.result, attempts: 1 }, { maxLength: Infinity });
  return {
    content: [{ type: 'text', text }],
    structuredContent: JSON.parse(whole) as Record<string, unknown>,
  };
}

function declaresOutput(registry: Pick<ToolRegistry, 'list'>, toolName: string): boolean {
  const { get } = registry as Partial<Pick<ToolRegistry, 'get'>>;
  return typeof get === 'function' && get.call(registry, toolName)?.outputSchema !== undefined;
}

function defaultFormat(result: unknown): CallToolResult {
  const text = toToolMessage({ ok: true, result, attempts: 1 }, { maxLength: Infinity });
  if (!isPlainObject(result)) return { content: [{ type: 'text', text }] };
  // The text is the JSON-safe rendering of the result, so parsing it gives a plain-data copy.
  return {
    content: [{ type: 'text', text }],
    structuredContent: JSON.parse(text) as Record<string, unknown>,
  };
}

interface Lookup {
  tools(): McpTool[];
  toolName(wireName: string): string;
  /** The registry's listing of a tool, for the Tasks decision. */
  listing(toolName: string): { timeoutMs: number | undefined; task?: true } | undefined;
}

function toolLookup(caller: string, options: McpToolsOptions): Lookup {
  const { registry, names = new Map<string, string>(), hints = {} } = options;
  if (typeof registry !== 'object' || registry === null || typeof registry.list !== 'function') {
    throw new TypeError(`${caller}() registry must be a ToolRegistry`);
  }
  if (!(names instanceof Map))
    throw new TypeError(`${caller}() names must be a Map of registry name to wire name`);
  if (typeof hints !== 'function' && (typeof hints !== 'object' || hints === null)) {
    throw new TypeError(`${caller}() hints must be an object or a function`);
  }
  if (typeof hints === 'object') {
    for (const [toolName, hint] of Object.entries(hints)) {
      if (typeof hint === 'object' && hint !== null)
        rejectUnknownKeys(`${caller}() hints[${JSON.stringify(toolName)}]`, hint, mcpToolHintKeys, 'hint');
    }
  }
  const hintsFor = (toolName: string): McpToolHints | undefined =>
    typeof hints === 'function'
      ? hints(toolName)
      : Object.hasOwn(hints, toolName)
        ? hints[toolName]
        : undefined;
  return {
    tools: () =>
      registry.list().map((listing) => {
        const {
          title,
          outputSchema = listedOutput(listing),
          annotations: given,
          ...hinted
        } = hintsFor(listing.name) ?? {};
        const annotations =
          given === undefined
            ? { idempotentHint: listing.idempotent, ...listing.annotations, ...hinted }
            : { ...given, ...hinted };
        const tool: McpTool = {
          name: names.get(listing.name) ?? listing.name,
          description: listing.description,
          // JSON Schema property values are objects (or booleans, which the SDK's type leaves out).
          inputSchema: toObjectSchema(listing.inputSchema) as McpTool['inputSchema'],
        };
        if (Object.keys(annotations).length > 0) tool.annotations = annotations;
        if (title !== undefined) tool.title = title;
        if (outputSchema !== undefined) tool.outputSchema = outputSchema;
        return tool;
      }),
    listing: (toolName) => registry.list().find((listing) => listing.name === toolName),
    toolName: (wireName) => {
      for (const [toolName, mapped] of names) if (mapped === wireName) return toolName;
      // A registry name that has a wire name of its own is not reachable under its registry name.
      return names.has(wireName) ? `\0${wireName}` : wireName;
    },
  };
}

// A registered output schema is served when it describes an object, as MCP requires.
function listedOutput(listing: ToolListing): McpTool['outputSchema'] {
  const schema = listing.outputSchema;
  return schema?.type === 'object' ? (schema as McpTool['outputSchema']) : undefined;
}

function offsetOf(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const offset = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!Number.isSafeInteger(offset) || offset < 0) throw invalidParams(`Invalid cursor: ${cursor}`);
  return offset;
}

function cursorFor(offset: number): string {
  return Buffer.from(String(offset), 'utf8').toString('base64url');
}

function invalidParams(message: string): Error {
  return Object.assign(new Error(message), { code: -32602 });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

function requireObject(caller: string, options: unknown, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${caller}() needs an options object with a registry`);
  }
  rejectUnknownKeys(caller, options, known);
}
