/**
 * Importing a remote MCP server's tools into a registry, each call a `tools/call` over a client.
 * @module
 */

import {
  Client,
  ProtocolError,
  type CallToolResult,
  type JsonSchemaValidator,
  type jsonSchemaValidator,
  type Progress,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import {
  ToolError,
  classifyRateLimit,
  OutcomeUnknownError,
  TransientError,
  type ToolAnnotations,
  type ToolContext,
  type ToolRegistry,
} from '../../index.js';
import {
  createNameMap,
  hasProgressListener,
  signalEndsWithAttempt,
  optionKeys,
  rejectUnknownKeys,
} from '../../middleware/index.js';
import { idempotencyKeyMetaKey } from './envelope.js';
import { callToolAsTask, canRunAsTask } from './import-tasks.js';
import { asksForInput, currentInputRound, InputRequiredError, type InputRound } from './input-required.js';
import { remoteSchema, type RemoteSchema } from './remote-schema.js';
import {
  callTool,
  isMcpClient,
  listenToolListChanged,
  listTools,
  messageOf,
  onToolListChanged,
  requestFailure,
  type CallOptions,
  type CallParams,
  type ListSubscription,
  type McpClient,
} from './sdk-client.js';
import { unsendable } from './sendable.js';
import { currentTraceMeta } from './trace-context.js';

/** Per-tool settings an import can give a remote tool (the proxy's config file feeds these). */
export interface ImportedToolSettings {
  /** Per-attempt timeout in milliseconds; `Infinity` for none. */
  timeoutMs?: number;
  /** Whether running it twice is harmless (unlocks retry after a timeout). */
  idempotent?: boolean;
  /**
   * Whether MCP Tasks are used for it whatever its timeout: served on as a task
   * (`ToolDefinition.task`), and called upstream declaring the Tasks extension.
   */
  task?: boolean;
  /** Whether a call needs approval (read by `approvalGate`); beats the tool's annotations. */
  requiresApproval?: boolean;
  /**
   * How long the remote may go without a progress report before the attempt times out, in
   * milliseconds: the SDK is asked for progress and restarts this timer on each report
   * (`resetTimeoutOnProgress`), while `timeoutMs` (the attempt's deadline) stays the total it
   * never runs past (`maxTotalTimeout`). @default undefined (no idle timeout: `timeoutMs` alone)
   */
  idleTimeoutMs?: number;
}

const importedToolSettingKeys = optionKeys<ImportedToolSettings>({
  idleTimeoutMs: true,
  timeoutMs: true,
  idempotent: true,
  task: true,
  requiresApproval: true,
});

/** Options for `importMcpTools`. */
export interface ImportMcpToolsOptions {
  /**
   * Dotted lowercase segments put in front of every local name (`github` → `github.create_issue`).
   * @default none
   */
  prefix?: string;
  /**
   * Whether the remote's `idempotentHint`/`readOnlyHint` may mark a tool `idempotent`. Hints are
   * untrusted, and `idempotent` unlocks a retry after a timeout, so this is off unless you trust
   * the server.
   * @default false
   */
  trustAnnotations?: boolean;
  /**
   * Turns a remote name into a registry name (before `prefix`).
   * @default camelCase → snake_case, lowercased, any other character but `.`, `_`, `-` → `_`
   */
  rename?: (remoteName: string) => string;
  /**
   * Which remote tools to import.
   * @default every tool
   */
  include?: (tool: McpTool) => boolean;
  /**
   * Timeout and idempotency per remote tool; what it returns wins over the annotations.
   * @default () => undefined
   */
  configure?: (tool: McpTool) => ImportedToolSettings | undefined;
  /**
   * What a successful call returns: `'value'` (the `structuredContent`, else the text, else the
   * content blocks) or `'result'` (the whole `CallToolResult`, for serving it on as it is; one
   * that no transport could write, nested more than 1000 levels deep, fails `internal`).
   * @default 'value'
   */
  output?: 'value' | 'result';
  /**
   * Makes a new connected client when the current one has closed (a closed client never
   * reconnects by itself), or when a Streamable HTTP server answers 404 for our session (it
   * restarted and forgot it). Calls that find the connection down wait for it within their own
   * deadline; without it they fail `transient`.
   * @default none
   */
  reconnect?: () => McpClient | Promise<McpClient>;
  /**
   * Validates args against each remote JSON Schema.
   * @default new AjvJsonSchemaValidator() (the SDK's Ajv setup, one per import)
   */
  validator?: jsonSchemaValidator;
  /**
   * How far past the attempt's deadline the SDK's own request timeout is set, so our timeout
   * layer (which cancels the remote call) always fires first.
   * @default 1000
   */
  timeoutSlackMs?: number;
  /**
   * Whether `notifications/tools/list_changed` triggers `refresh()` (this sets the client's
   * handler for it and, on a 2026-07-28 connection to a server announcing `tools.listChanged`,
   * opens a `subscriptions/listen` stream, closed by `dispose()`, a reconnect or the client's close).
   * @default true
   */
  watchListChanged?: boolean;
  /**
   * Whether a call forwards its idempotency key as `_meta["tool-dispatcher/idempotencyKey"]`, so
   * a remote tool-dispatcher server dedupes retries too.
   * @default true
   */
  forwardIdempotencyKey?: boolean;
  /**
   * Calls with more than this many milliseconds left before their deadline (none counts as
   * more), and tools configured `task: true`, declare the `io.modelcontextprotocol/tasks`
   * extension when the server advertises it on 2026-07-28: a handle it answers with is polled
   * with `tasks/get` at its `pollIntervalMs` within the attempt's deadline, and cancelled with
   * `tasks/cancel` when the deadline or the caller ends the wait. `Infinity`: only `task: true`.
   * @default 60_000
   */
  taskThresholdMs?: number;
  /**
   * Receives failures of work nobody awaits: a refresh on `list_changed`, a reconnect.
   * @default () => {}
   */
  onError?: (error: unknown) => void;
  /**
   * Called after a refresh that changed the imported tools.
   * @default () => {}
   */
  onChange?: (names: ReadonlyMap<string, string>) => void;
}

const importMcpToolsOptionKeys = optionKeys<ImportMcpToolsOptions>({
  prefix: true,
  trustAnnotations: true,
  rename: true,
  include: true,
  configure: true,
  output: true,
  reconnect: true,
  validator: true,
  timeoutSlackMs: true,
  watchListChanged: true,
  forwardIdempotencyKey: true,
  taskThresholdMs: true,
  onError: true,
  onChange: true,
});

/** What `importMcpTools` resolves to: the live name map and the means to keep it current. */
export interface ImportedMcpTools {
  /** Local registry name → remote tool name, kept current by `refresh()`. */
  readonly names: ReadonlyMap<string, string>;
  /** Local registry name → the remote tool as last listed. */
  readonly tools: ReadonlyMap<string, McpTool>;
  /** The client calls go through now (a new one after a reconnect). */
  readonly client: McpClient;
  /** Lists the remote tools again and registers, updates and unregisters to match. */
  refresh(): Promise<void>;
  /**
   * Replaces the client through the `reconnect` option now (once, however many ask), and closes
   * the one it replaces.
   */
  reconnect(): Promise<McpClient>;
  /** Unregisters every imported tool and stops watching the remote list. */
  dispose(): void;
}

// The registry's own name rule: dotted lowercase segments.
const registryNamePattern = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;
// The SDK turns a timeout that does not fit a 32-bit signed int (Infinity included) into 1 ms.
const maxSdkTimeoutMs = 2 ** 31 - 1;

/**
 * Imports every tool of a connected MCP client into the registry under valid, collision-checked
 * names; each call validates locally against the remote JSON Schema and runs `tools/call`.
 *
 * @example
 * const client = new Client({ name: 'agent', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'node', args: ['github-server.js'] }));
 * const imported = await importMcpTools(client, registry, { prefix: 'github' });
 * imported.names; // Map { 'github.create_issue' => 'createIssue', … }
 */
export async function importMcpTools(
  client: McpClient,
  registry: ToolRegistry,
  options: ImportMcpToolsOptions = {},
): Promise<ImportedMcpTools> {
  if (!isMcpClient(client)) {
    throw new TypeError(
      'importMcpTools() needs a Client from @modelcontextprotocol/client (or @modelcontextprotocol/sdk/client)',
    );
  }
  if (typeof registry !== 'object' || registry === null || typeof registry.register !== 'function') {
    throw new TypeError('importMcpTools() registry must be a ToolRegistry');
  }
  const settings = importSettings(options);
  const importer = new Importer(client, registry, settings);
  await importer.refresh();
  return importer.face;
}

interface Settings {
  prefix: string | undefined;
  trustAnnotations: boolean;
  rename: (remoteName: string) => string;
  include: (tool: McpTool) => boolean;
  configure: (tool: McpTool) => ImportedToolSettings | undefined;
  output: 'value' | 'result';
  reconnect: (() => McpClient | Promise<McpClient>) | undefined;
  validator: jsonSchemaValidator;
  timeoutSlackMs: number;
  watchListChanged: boolean;
  forwardIdempotencyKey: boolean;
  taskThresholdMs: number;
  onError: (error: unknown) => void;
  onChange: (names: ReadonlyMap<string, string>) => void;
}

function importSettings(options: ImportMcpToolsOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('importMcpTools() options must be an object');
  }
  rejectUnknownKeys('importMcpTools', options, importMcpToolsOptionKeys);
  const {
    prefix,
    trustAnnotations = false,
    rename = registryNameOf,
    include = () => true,
    configure = () => undefined,
    output = 'value',
    reconnect,
    validator = new AjvJsonSchemaValidator(),
    timeoutSlackMs = 1000,
    watchListChanged = true,
    forwardIdempotencyKey = true,
    taskThresholdMs = 60_000,
    onError = () => {},
    onChange = () => {},
  } = options;
  if (prefix !== undefined && (typeof prefix !== 'string' || !registryNamePattern.test(prefix))) {
    throw new TypeError(
      `importMcpTools() prefix must be dotted lowercase segments such as "github", got ${JSON.stringify(prefix)}`,
    );
  }
  for (const [name, value] of [
    ['trustAnnotations', trustAnnotations],
    ['watchListChanged', watchListChanged],
    ['forwardIdempotencyKey', forwardIdempotencyKey],
  ] as const) {
    if (typeof value !== 'boolean') throw new TypeError(`importMcpTools() ${name} must be a boolean`);
  }
  for (const [name, value] of [
    ['rename', rename],
    ['include', include],
    ['configure', configure],
    ['onError', onError],
    ['onChange', onChange],
  ] as const) {
    if (typeof value !== 'function') throw new TypeError(`importMcpTools() ${name} must be a function`);
  }
  if (reconnect !== undefined && typeof reconnect !== 'function') {
    throw new TypeError('importMcpTools() reconnect must be a function returning a connected Client');
  }
  if (output !== 'value' && output !== 'result') {
    throw new TypeError(`importMcpTools() output must be 'value' or 'result', got ${String(output)}`);
  }
  if (typeof validator !== 'object' || validator === null || typeof validator.getValidator !== 'function') {
    throw new TypeError('importMcpTools() validator must have a getValidator(schema) method');
  }
  if (typeof timeoutSlackMs !== 'number' || !(timeoutSlackMs >= 0) || !Number.isFinite(timeoutSlackMs)) {
    throw new TypeError(
      `importMcpTools() timeoutSlackMs must be a finite number >= 0, got ${String(timeoutSlackMs)}`,
    );
  }
  if (typeof taskThresholdMs !== 'number' || !(taskThresholdMs > 0)) {
    throw new TypeError(
      `importMcpTools() taskThresholdMs must be a number > 0 (Infinity allowed), got ${String(taskThresholdMs)}`,
    );
  }
  return {
    prefix,
    trustAnnotations,
    rename,
    include,
    configure,
    output,
    reconnect,
    validator,
    timeoutSlackMs,
    watchListChanged,
    forwardIdempotencyKey,
    taskThresholdMs,
    onError,
    onChange,
  };
}

class Importer {
  readonly names = new Map<string, string>();
  readonly tools = new Map<string, McpTool>();
  readonly face: ImportedMcpTools;
  #client: McpClient;
  #reconnecting: Promise<McpClient> | undefined;
  #refreshing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #disposed = false;
  #listings = 0;
  // The 2026-07-28 `subscriptions/listen` stream of the current client, while one is open.
  #listening: Promise<ListSubscription | undefined> | undefined;
  // Compiled validators by local name and schema text: a refresh (or a restart) that finds the
  // same schema reuses it instead of compiling again, so Ajv's cache does not grow per refresh.
  #schemas = new Map<string, { text: string; schema: RemoteSchema }>();
  // Output checks for results that came by the task path (the SDK checks the others itself).
  #outputs = new WeakMap<McpTool, JsonSchemaValidator<unknown>>();

  constructor(
    client: McpClient,
    readonly registry: ToolRegistry,
    readonly settings: Settings,
  ) {
    this.#client = client;
    this.#watch(client);
    const importer = this;
    this.face = Object.freeze({
      names: this.names,
      tools: this.tools,
      get client() {
        return importer.#client;
      },
      refresh: () => this.refresh(),
      reconnect: () => this.reconnect(),
      dispose: () => this.dispose(),
    });
  }

  refresh(): Promise<void> {
    const running = this.#refreshing;
    if (running !== undefined) {
      // One listing at a time. A change announced while one runs may postdate the list it read,
      // so every request made meanwhile shares one more listing after it.
      this.#queued ??= running
        .catch(() => {})
        .then(() => {
          this.#queued = undefined;
          return this.refresh();
        });
      return this.#queued;
    }
    const listing = this.#list().finally(() => {
      if (this.#refreshing === listing) this.#refreshing = undefined;
    });
    this.#refreshing = listing;
    return listing;
  }

  reconnect(): Promise<McpClient> {
    const { reconnect } = this.settings;
    if (reconnect === undefined)
      return Promise.reject(new TypeError('importMcpTools() has no reconnect option'));
    if (this.#reconnecting === undefined) {
      const previous = this.#client;
      const reconnecting = (async () => {
        const client = await reconnect();
        if (!isMcpClient(client)) throw new TypeError('reconnect() must return a connected Client');
        this.#client = client;
        this.#watch(client);
        // A client replaced while still open (a session the server forgot, a forced reconnect)
        // would keep its streams and timers.
        if (previous !== client && previous.transport !== undefined) previous.close().catch(() => {});
        return client;
      })().finally(() => {
        if (this.#reconnecting === reconnecting) this.#reconnecting = undefined;
      });
      this.#reconnecting = reconnecting;
      // The remote may have other tools after a restart; nobody waits for this listing.
      reconnecting.then(() => this.refresh().catch(this.settings.onError), this.settings.onError);
    }
    return this.#reconnecting;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.settings.watchListChanged) onToolListChanged(this.#client, undefined);
    this.#unlisten();
    for (const name of this.names.keys()) this.registry.unregister(name);
    this.names.clear();
    this.tools.clear();
    this.#schemas.clear();
  }

  #watch(client: McpClient): void {
    if (!this.settings.watchListChanged) return;
    onToolListChanged(client, () => {
      this.refresh().catch(this.settings.onError);
    });
    this.#unlisten();
    // A 2026-07-28 server sends list_changed only on a stream the client opens; the client's
    // close ends the stream with it.
    const listening = listenToolListChanged(client).then(
      (subscription) => {
        if (this.#listening === listening) return subscription;
        subscription?.close().catch(() => {});
        return undefined;
      },
      (error: unknown) => {
        if (this.#listening === listening && client.transport !== undefined) this.settings.onError(error);
        return undefined;
      },
    );
    this.#listening = listening;
  }

  #unlisten(): void {
    const listening = this.#listening;
    this.#listening = undefined;
    listening?.then((subscription) => subscription?.close()).catch(() => {});
  }

  async #list(): Promise<void> {
    if (this.#disposed) return;
    const client = await this.#connection(undefined);
    const listed: McpTool[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await listTools(client, cursor);
      listed.push(...page.tools);
      cursor = page.nextCursor;
      // A server that hands back a cursor it gave before would page forever.
      if (cursor !== undefined && seen.has(cursor)) break;
      if (cursor !== undefined) seen.add(cursor);
    } while (cursor !== undefined);
    if (this.#disposed) return;

    const remote = listed.filter((tool) => this.settings.include(tool));
    const { prefix, rename } = this.settings;
    const nameMap = createNameMap(
      remote.map((tool) => tool.name),
      {
        pattern: registryNamePattern,
        maxLength: 256,
        encode: (name) => (prefix === undefined ? rename(name) : `${prefix}.${rename(name)}`),
      },
    );
    const next = new Map<string, McpTool>();
    for (const tool of remote) {
      const local = nameMap.wireName(tool.name);
      if (this.registry.has(local) && !this.names.has(local)) {
        throw new TypeError(
          `The MCP tool "${tool.name}" maps to "${local}", which the registry already has; use another prefix or rename`,
        );
      }
      next.set(local, tool);
    }
    // Every definition is built (and every schema compiled) before the registry changes.
    const definitions = [...next].map(([local, tool]) => this.#definition(local, tool));

    const first = this.#listings === 0;
    this.#listings += 1;
    const before = JSON.stringify([...this.tools]);
    for (const name of this.names.keys()) {
      if (next.has(name)) continue;
      this.registry.unregister(name);
      this.#schemas.delete(name);
    }
    for (const definition of definitions) this.registry.register(definition, { override: true });
    this.names.clear();
    this.tools.clear();
    for (const [local, tool] of next) {
      this.names.set(local, tool.name);
      this.tools.set(local, tool);
    }
    if (!first && JSON.stringify([...this.tools]) !== before) {
      try {
        this.settings.onChange(this.names);
      } catch (error) {
        this.settings.onError(error);
      }
    }
  }

  #definition(local: string, tool: McpTool) {
    const configured = this.settings.configure(tool) ?? {};
    rejectUnknownKeys(
      `importMcpTools() configure(${JSON.stringify(tool.name)})`,
      configured,
      importedToolSettingKeys,
      'setting',
    );
    const { idleTimeoutMs } = configured;
    if (
      idleTimeoutMs !== undefined &&
      !(typeof idleTimeoutMs === 'number' && idleTimeoutMs > 0 && Number.isFinite(idleTimeoutMs))
    ) {
      throw new TypeError(
        `importMcpTools() configure(${JSON.stringify(tool.name)}) idleTimeoutMs must be a finite number > 0, got ${String(idleTimeoutMs)}`,
      );
    }
    const hinted = tool.annotations?.idempotentHint === true || tool.annotations?.readOnlyHint === true;
    const idempotent = configured.idempotent ?? (this.settings.trustAnnotations && hinted);
    return {
      name: local,
      description: tool.description ?? '',
      inputSchema: this.#schemaOf(local, tool),
      idempotent,
      ...(configured.timeoutMs === undefined ? {} : { timeoutMs: configured.timeoutMs }),
      ...(configured.task === undefined ? {} : { task: configured.task }),
      // The server's hints, for an approval gate (which overrides beat: hints may be wrong).
      ...(tool.annotations === undefined ? {} : { annotations: tool.annotations as ToolAnnotations }),
      ...(configured.requiresApproval === undefined ? {} : { requiresApproval: configured.requiresApproval }),
      handler: (args: Record<string, unknown>, ctx: ToolContext) =>
        this.#call(tool, { idempotent, task: configured.task === true, idleTimeoutMs }, args, ctx),
    };
  }

  #schemaOf(local: string, tool: McpTool): RemoteSchema {
    const text = JSON.stringify(tool.inputSchema);
    const known = this.#schemas.get(local);
    if (known?.text === text) return known.schema;
    const schema = remoteSchema(tool.inputSchema, this.settings.validator);
    this.#schemas.set(local, { text, schema });
    return schema;
  }

  async #call(
    tool: McpTool,
    how: { idempotent: boolean; task: boolean; idleTimeoutMs: number | undefined },
    args: Record<string, unknown>,
    ctx: ToolContext,
  ): Promise<unknown> {
    const { idempotent, task, idleTimeoutMs } = how;
    ctx.signal.throwIfAborted();
    const remoteName = tool.name;
    // A signal of this call's own: the SDK never removes its listener from the signal it gets,
    // and aborting a shared signal later would cancel requests that already finished. The
    // attempt's signal is one when it ends with the attempt (the default stack's); otherwise a
    // controller linked to it. A new AbortSignal costs more than the rest of the call here.
    const controller = signalEndsWithAttempt(ctx) ? undefined : new AbortController();
    const forward = () => controller?.abort(ctx.signal.reason);
    if (controller !== undefined) ctx.signal.addEventListener('abort', forward, { once: true });
    const signal = controller === undefined ? ctx.signal : controller.signal;
    let client: McpClient | undefined;
    let result: CallToolResult;
    try {
      // The usual case, a live client and no reconnect under way, costs no extra await.
      client =
        this.#reconnecting === undefined && this.#client.transport !== undefined
          ? this.#client
          : await this.#connection(signal);
      const key = this.settings.forwardIdempotencyKey ? ctx.idempotencyKey : undefined;
      const timeout = sdkTimeoutMs(ctx.deadline, this.settings.timeoutSlackMs);
      const requestOptions = requestOptionsOf(ctx, signal, timeout, idleTimeoutMs);
      const trace = currentTraceMeta();
      const meta =
        trace === undefined
          ? key === undefined
            ? undefined
            : { [idempotencyKeyMetaKey]: key }
          : { ...trace, ...(key === undefined ? {} : { [idempotencyKeyMetaKey]: key }) };
      // Only a 2026-07-28 upstream has input_required to pass back; a 2025 one gets no round.
      const round =
        client instanceof Client && client.getProtocolEra() === 'modern' ? currentInputRound() : undefined;
      const params: CallParams =
        round === undefined
          ? { name: remoteName, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) }
          : roundParams(remoteName, args, meta, round);
      const taskClient =
        (task || ctx.deadline - Date.now() > this.settings.taskThresholdMs) && canRunAsTask(client)
          ? client
          : undefined;
      const answer =
        taskClient === undefined
          ? undefined
          : await callToolAsTask(taskClient, params, { signal, timeoutMs: timeout });
      if (answer !== undefined && 'result' in answer) {
        result = answer.result;
        this.#checkOutput(tool, result);
      } else {
        // The server asked for input (MRTR): the SDK's own call fulfils it and runs the tool,
        // unless our caller is the one to answer it.
        result = await callTool(
          client,
          params,
          round === undefined ? requestOptions : { ...requestOptions, allowInputRequired: true },
        );
      }
    } catch (error) {
      // Our deadline or the caller's abort: the dispatcher reports it as timeout or cancelled.
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw this.#classify(error, remoteName, idempotent, client);
    } finally {
      if (controller !== undefined) ctx.signal.removeEventListener('abort', forward);
    }
    if (asksForInput(result)) throw new InputRequiredError(remoteName, result);
    if (result.isError === true)
      throw classifyRateLimit(result) ?? this.#remoteFailure(remoteName, textOf(result));
    if (this.settings.output === 'value') return resultValue(result);
    // A result for serving on that no transport can write would leave our own client unanswered.
    const problem = unsendable(result);
    if (problem !== undefined) {
      throw new Error(
        `The MCP tool "${remoteName}" answered with a result that cannot be sent on: ${problem}`,
      );
    }
    return result;
  }

  // What the SDK client checks after a call, for a result that came by the task path.
  #checkOutput(tool: McpTool, result: CallToolResult): void {
    if (tool.outputSchema === undefined || result.isError === true) return;
    if (result.structuredContent === undefined) {
      throw new ProtocolError(
        -32600,
        `Tool ${tool.name} has an output schema but did not return structured content`,
      );
    }
    let check = this.#outputs.get(tool);
    if (check === undefined) {
      check = this.settings.validator.getValidator<unknown>(tool.outputSchema as Record<string, unknown>);
      this.#outputs.set(tool, check);
    }
    const checked = check(result.structuredContent);
    if (!checked.valid) {
      throw new ProtocolError(
        -32602,
        `Structured content does not match the tool's output schema: ${checked.errorMessage}`,
      );
    }
  }

  // Resolves to a client that can take a call: the current one, or the one a reconnect brings.
  async #connection(signal: AbortSignal | undefined): Promise<McpClient> {
    if (
      this.#reconnecting === undefined &&
      this.#client.transport === undefined &&
      this.settings.reconnect !== undefined
    ) {
      this.reconnect().catch(() => {
        // Whoever waits below gets this failure; the reconnect itself already reported it.
      });
    }
    const reconnecting = this.#reconnecting;
    if (reconnecting === undefined) return this.#client;
    try {
      return await untilAborted(reconnecting, signal);
    } catch (error) {
      if (signal?.aborted === true) throw error;
      throw new TransientError(`The MCP server could not be reached again: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  #remoteFailure(remoteName: string, text: string): Error {
    // McpServer answers an unknown tool with an isError result, not a JSON-RPC error.
    if (/^MCP error -32602: Tool .* not found$/.test(text)) return this.#unknownTool(remoteName, text);
    return new ToolError(text || `The MCP tool "${remoteName}" reported an error`);
  }

  #unknownTool(remoteName: string, cause: unknown): Error {
    this.refresh().catch(this.settings.onError);
    return new ToolError(
      `Unknown tool: the MCP server no longer has "${remoteName}"; the tool list is being refreshed`,
      { cause, kind: 'not_found' },
    );
  }

  #classify(error: unknown, remoteName: string, idempotent: boolean, client: McpClient | undefined): Error {
    const failure = requestFailure(error, client?.transport?.sessionId !== undefined);
    const { message } = failure;
    switch (failure.type) {
      case 'closed':
        this.#reconnectAfterLoss(client);
        // The request was sent, so the remote may have run it, exactly as after a timeout:
        // running a write again is not ours to decide.
        return idempotent
          ? new TransientError(`The MCP connection closed during the call: ${message}`, { cause: error })
          : new OutcomeUnknownError(
              `The MCP connection closed while "${remoteName}" was running, so its outcome is unknown: it may have run. It is not run again; check before calling it again`,
              { cause: error, window: 'connection_lost' },
            );
      case 'timeout':
        // Only reachable when no deadline of ours came first (we size the SDK timeout past it):
        // the remote went silent for the tool's idle timeout.
        return idempotent
          ? new TransientError(`The MCP request timed out: ${message}`, { cause: error })
          : new OutcomeUnknownError(
              `The MCP request to "${remoteName}" timed out; it may have run, so check before calling it again`,
              { cause: error, window: 'attempt_timeout' },
            );
      case 'protocol':
        return new ToolError(
          `The MCP server refused the call to "${remoteName}" at the protocol level (${String(failure.code)}): ${message}`,
          { cause: error, kind: 'protocol' },
        );
      case 'rpc':
        if (failure.code === rateLimitedCode) return rateLimited(remoteName, message, error);
        return this.#rpcFailure(failure.code, message, remoteName, error);
      case 'malformed':
        return new Error(`The MCP server sent a malformed result: ${message}`, { cause: error });
      case 'session_lost':
        // The server forgot our session (it restarted): the request never ran, and the transport
        // spec has the client start a new session.
        this.#renewSession(client as McpClient);
        return new TransientError(
          `The MCP server no longer knows this session (HTTP 404), so a new session is being started: ${message}`,
          { cause: error },
        );
      default:
        // Anything else came from the transport: a closed pipe, a refused HTTP connection, "Not connected".
        this.#reconnectAfterLoss(client);
        return new TransientError(`The MCP transport failed: ${message}`, { cause: error });
    }
  }

  #rpcFailure(code: number, message: string, remoteName: string, error: unknown): Error {
    // MCP's rate-limit error (SEP-3304): refused before it ran, so retried after `retryAfterMs`.
    if (code === -32023) return classifyRateLimit(error) ?? new TransientError(message, { cause: error });
    if (code !== -32602) return new Error(message, { cause: error });
    // The SDK client checks structuredContent against the output schema after the call,
    // and reports a mismatch with the code of bad arguments.
    if (outputSchemaFailure.test(message)) {
      return new Error(
        `The MCP tool "${remoteName}" answered with structuredContent that breaks its output schema: ${message}`,
        { cause: error },
      );
    }
    if (/unknown tool|not found/i.test(message)) return this.#unknownTool(remoteName, error);
    return new ToolError(`Invalid arguments for "${remoteName}": ${message}`, {
      cause: error,
      kind: 'schema',
    });
  }

  #renewSession(client: McpClient): void {
    if (this.settings.reconnect === undefined || client !== this.#client) return;
    this.reconnect().catch(() => {
      // Reported through onError by reconnect(); the next call tries again.
    });
  }

  #reconnectAfterLoss(client: McpClient | undefined): void {
    if (this.settings.reconnect === undefined || client !== this.#client || client.transport !== undefined)
      return;
    this.reconnect().catch(() => {
      // Reported through onError by reconnect(); the next call tries again.
    });
  }
}

// The SDK options of one attempt's call. Progress is asked for only when our caller listens or an
// idle timeout needs it: a progressToken makes the SDK copy the request twice more and the remote
// track the call. With an idle timeout the SDK's timer restarts on each report, capped by the
// attempt's whole deadline.
function requestOptionsOf(
  ctx: ToolContext,
  signal: AbortSignal,
  timeout: number,
  idleTimeoutMs: number | undefined,
): CallOptions {
  const listening = hasProgressListener(ctx);
  if (idleTimeoutMs === undefined && !listening) return { signal, timeout };
  const onprogress = listening
    ? ({ progress, total, message }: Progress) => ctx.progress(progress, total, message)
    : () => {};
  if (idleTimeoutMs === undefined) return { signal, timeout, onprogress };
  return {
    signal,
    timeout: Math.min(timeout, Math.ceil(idleTimeoutMs)),
    resetTimeoutOnProgress: true,
    maxTotalTimeout: timeout,
    onprogress,
  };
}

/** MCP's rate-limit error code (SEP-3304): the server refused before running the call. */
const rateLimitedCode = -32023;

// A remote `-32023` is the server's own rate limit, as ours is: `rate_limited` with the wait it
// sent in `data.retryAfterMs` (a wait that is no number >= 0 gives none rather than a wrong one),
// never a retry by default, and never a breaker failure.
function rateLimited(remoteName: string, message: string, error: unknown): ToolError {
  const wait = ((error as { data?: unknown }).data as { retryAfterMs?: unknown } | null | undefined)
    ?.retryAfterMs;
  const retryAfterMs = typeof wait === 'number' && wait >= 0 ? wait : undefined;
  return new ToolError(`The MCP server rate-limited "${remoteName}": ${message}`, {
    kind: 'rate_limited',
    cause: error,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/**
 * The SDK request timeout for an attempt: a little past its deadline, and never above 2^31−1
 * (the SDK turns a larger value, `Infinity` included, into 1 ms).
 *
 * @example
 * client.callTool(params, undefined, { signal, timeout: sdkTimeoutMs(ctx.deadline, 1_000) });
 */
export function sdkTimeoutMs(deadline: number, slackMs: number): number {
  if (!Number.isFinite(deadline)) return maxSdkTimeoutMs;
  return Math.min(maxSdkTimeoutMs, Math.max(1, Math.ceil(deadline - Date.now() + slackMs)));
}

/**
 * The default remote-to-registry name: camelCase to snake_case, lowercased, any character but
 * letters, digits, `.`, `_` and `-` made `_`, empty segments dropped.
 *
 * @example
 * registryNameOf('getWeather'); // 'get_weather'
 */
export function registryNameOf(remoteName: string): string {
  return remoteName
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '_')
    .split('.')
    .map((segment) => segment.replace(/^[_-]+/, ''))
    .filter((segment) => segment !== '')
    .join('.');
}

// A call made while serving a 2026-07-28 round: the retry's answers and state go upstream, and
// so do the capabilities of our caller, who is the one to answer any further input request.
function roundParams(
  remoteName: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  round: InputRound,
): CallParams {
  const { inputResponses, requestState, capabilities } = round;
  const withCapabilities =
    capabilities === undefined ? meta : { ...meta, [clientCapabilitiesMetaKey]: capabilities };
  return {
    name: remoteName,
    arguments: args,
    ...(withCapabilities === undefined ? {} : { _meta: withCapabilities }),
    ...(inputResponses === undefined ? {} : { inputResponses }),
    ...(requestState === undefined ? {} : { requestState }),
  };
}

const clientCapabilitiesMetaKey = 'io.modelcontextprotocol/clientCapabilities';

function textOf(result: CallToolResult): string {
  return result.content
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n')
    .trim();
}

function resultValue(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  if (result.content.every((block) => block.type === 'text')) return textOf(result);
  return result.content;
}

// What the SDK client says when structuredContent fails the tool's output schema.
const outputSchemaFailure =
  /^(Structured content does not match the tool's output schema|Failed to validate structured content)/;

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
