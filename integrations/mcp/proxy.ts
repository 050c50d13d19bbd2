/**
 * The resilience proxy: an upstream MCP server's tools, served again through the dispatcher.
 * @module
 */

import { createHash } from 'node:crypto';
import {
  Client,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type PriorDiscovery,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  InMemoryServerEventBus,
  type CallToolResult,
  type McpRequestContext,
  type McpServerFactory,
  type Server,
  type ServerEventBus,
  type Tool as McpTool,
} from '@modelcontextprotocol/server';
import {
  ToolRegistry,
  circuitBreaker,
  createDispatcher,
  approvalGate,
  defaultStack,
  type ApprovalGate,
  type ApprovalStore,
  isRetryable,
  logging,
  type CircuitStore,
  type Dispatcher,
  type IdempotencyStore,
  type Logger,
  type LogLevel,
  type Middleware,
} from '../../index.js';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { importMcpTools, type ImportedMcpTools } from './client.js';
import type { McpClient } from './sdk-client.js';
import {
  createMcpServer,
  servesOneHttpRequest,
  type CreateMcpServerOptions,
  type McpToolHints,
} from './server.js';
import {
  checkConfig,
  type McpProxyConfig,
  type McpProxyToolConfig,
  type McpUpstream,
} from './proxy-config.js';
import { maskedUrl } from './masked-url.js';

export { checkConfig, mcpProxyConfigSchema } from './proxy-config.js';
export type {
  McpServerEntry,
  McpProxyConfig,
  McpProxyTasksConfig,
  McpProxyToolConfig,
  McpUpstream,
} from './proxy-config.js';

/** Options for `createMcpProxy`. */
export interface McpProxyOptions {
  /** The upstream MCP server. */
  upstream: McpUpstream;
  /**
   * Timeouts, attempts, idempotency, concurrency and breaker settings.
   * @default {} (30 s timeouts, 3 attempts, nothing idempotent, 8 at once, breaker 5 / 30 s)
   */
  config?: McpProxyConfig;
  /**
   * Where log lines go; one line per record.
   * @default (line) => process.stderr.write(line + '\n')
   */
  log?: (line: string) => void;
  /**
   * The lowest level logged; `info` logs one line per call.
   * @default 'warn'
   */
  logLevel?: LogLevel | 'silent';
  /**
   * How each record is written: `text` (`[mcp-proxy] warn event key=value …`) or `json`, one
   * object a line in pino's shape (`{"level":40,"time":<epoch ms>,"msg":"<event>",…}`) for log
   * collectors.
   * @default 'text'
   */
  logFormat?: 'text' | 'json';
  /**
   * The name and version the proxy reports to its client.
   * @default { name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' }
   */
  info?: {
    /** The server name the client sees. */
    name: string;
    /** The server version the client sees. */
    version: string;
  };
  /**
   * Stores shared with the other processes of a fleet (`--redis-url` passes Redis ones): the
   * idempotency store dedupes keyed calls and keeps MCP Tasks, the circuit store holds the
   * breakers' state.
   * @default {} (this process's memory)
   */
  stores?: McpProxyStores;
}

const mcpProxyOptionKeys = optionKeys<McpProxyOptions>({
  upstream: true,
  config: true,
  log: true,
  logLevel: true,
  logFormat: true,
  info: true,
  stores: true,
});

/** The stores a proxy shares with the other processes of a fleet. */
export interface McpProxyStores {
  /**
   * Dedupes keyed calls and keeps the Tasks served to 2026-07-28 clients.
   * @default a memory store of the proxy's own
   */
  idempotency?: IdempotencyStore;
  /**
   * The breakers' state.
   * @default a memory store of the proxy's own
   */
  circuit?: CircuitStore;
  /**
   * The requests `--require-approval` pauses, their answers and audit log: shared, a request paused
   * on one process can be answered (and listed by `--console`) on any.
   * @default a memory store of the proxy's own
   */
  approvals?: ApprovalStore;
}

const mcpProxyStoreKeys = optionKeys<McpProxyStores>({ idempotency: true, circuit: true, approvals: true });

/** A running proxy: serve `server` over a transport, `close()` to stop the upstream. */
export interface McpProxy {
  /** An MCP server for one connection of the 2025 era (`server.connect(transport)`). */
  readonly server: Server;
  /**
   * Makes a fresh server per connection or request for `serveStdio` and `createMcpHandler`,
   * which serve 2025-11-25 and 2026-07-28 clients alike; every one shares the dispatcher.
   */
  readonly serverFactory: McpServerFactory;
  /**
   * The registry of imported upstream tools, under names of the proxy's own (`imported.names`
   * maps each to its upstream name, which is the only one on the wire).
   */
  readonly registry: ToolRegistry;
  /** The dispatcher every call goes through. */
  readonly dispatcher: Dispatcher;
  /** The approval gate of `config.requireApproval` (`undefined` when it is `none`). */
  readonly approvals: ApprovalGate | undefined;
  /**
   * Change events for `createMcpHandler(serverFactory, { bus: proxy.events })`: a changed
   * upstream tool list reaches 2026-07-28 clients listening over HTTP (`subscriptions/listen`),
   * as the servers of stdio connections send it to theirs.
   */
  readonly events: ServerEventBus;
  /** The import: local names, the upstream client. */
  readonly imported: ImportedMcpTools;
  /** Stops restarting, closes the server and the upstream (its process ends). */
  close(): Promise<void>;
}

const levels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
// A process that lived this long was not crash-looping: the next restart is immediate again.
const stableAfterMs = 10_000;
const firstBackoffMs = 250;
const maxBackoffMs = 10_000;

/**
 * Starts an upstream MCP server, imports its tools, and returns an MCP server that serves each
 * under its upstream name through the default stack plus a circuit breaker. A crashed upstream
 * is restarted at once (with backoff when it keeps crashing); calls in flight fail `transient`
 * and are retried when the tool is idempotent, and fail `internal` (their outcome unknown)
 * otherwise; calls that arrive meanwhile wait for the new process within their deadline.
 *
 * @throws Error when the upstream does not start or its tools cannot be imported; TypeError for
 * a bad option, or a `config.tools` entry that names no upstream tool.
 * @example
 * const proxy = await createMcpProxy({ upstream: { command: 'node', args: ['server.js'] },
 *   config: { defaults: { timeoutMs: 10_000 } }, logLevel: 'info' });
 * await proxy.server.connect(new StdioServerTransport());
 */
export async function createMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('createMcpProxy() needs an options object with an upstream');
  }
  rejectUnknownKeys('createMcpProxy', options, mcpProxyOptionKeys);
  const {
    upstream,
    config = {},
    log = (line: string) => void process.stderr.write(`${line}\n`),
    logLevel = 'warn',
    logFormat = 'text',
    info = { name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' },
    stores = {},
  } = options;
  const connect = upstreamConnector(upstream);
  checkConfig(config);
  checkOptions(log, logLevel, stores);
  if (logFormat !== 'text' && logFormat !== 'json') {
    throw new TypeError(`createMcpProxy() logFormat must be text or json, got ${String(logFormat)}`);
  }
  let imported: ImportedMcpTools | undefined;
  // Every server made for a connection, so a changed tool list reaches each of their clients.
  const servers = new Set<Server>();
  // Log lines name tools as the host knows them: by their upstream names.
  const logger = lineLogger(
    log,
    logLevel,
    logFormat,
    (toolName) => imported?.names.get(toolName) ?? toolName,
  );
  const settingsOf = toolSettings(config);
  const supervisor = supervise(connect, logger, () => {
    imported?.reconnect().catch(() => {
      // Logged by the import's onError; calls waiting for it fail transient.
    });
  });
  const where =
    'url' in upstream ? maskedUrl(upstream.url) : [upstream.command, ...(upstream.args ?? [])].join(' ');

  let first: McpClient;
  try {
    first = await supervisor.start();
  } catch (error) {
    throw new Error(`The upstream MCP server (${where}) did not start: ${messageOf(error)}`, {
      cause: error,
    });
  }
  const registry = new ToolRegistry();
  const events = new InMemoryServerEventBus();
  try {
    imported = await importUpstream(first, registry, supervisor, settingsOf, config, logger, () => {
      events.publish({ kind: 'tools_list_changed' });
      for (const server of servers) {
        if (server.transport === undefined) continue;
        server.sendToolListChanged().catch(() => {
          // The host has gone: nobody to tell.
        });
      }
    });
    checkToolNames(config, imported.names);
  } catch (error) {
    await supervisor.stop(imported?.client ?? first);
    if (error instanceof TypeError) throw error;
    throw new Error(
      `The upstream MCP server (${where}) started, but its tools could not be imported: ${messageOf(error)}`,
      { cause: error },
    );
  }
  const names = imported.names;
  const approvals = proxyGate(registry, config.requireApproval ?? 'none', stores.approvals);
  const dispatcher = proxyDispatcher(registry, config, stores, logger, logLevel, approvals, (toolName) =>
    settingsOf((toolName === undefined ? undefined : names.get(toolName)) ?? ''),
  );

  const upstreamInfo = first.getServerVersion();
  const instructions = first.getInstructions();
  const serverOptions: CreateMcpServerOptions = {
    registry,
    dispatcher,
    names,
    info,
    ...(instructions === undefined ? {} : { instructions }),
    hints: (toolName) => {
      const tool = imported?.tools.get(toolName);
      return tool === undefined ? undefined : servedHints(tool, settingsOf(tool.name).idempotent);
    },
    // The upstream's own result, content blocks and all, goes back as it came.
    formatResult: (result) => result as CallToolResult,
    // Long tools answer 2026-07-28 clients that declare Tasks with a handle, kept beside the
    // keyed calls when the fleet shares an idempotency store (one memory store per proxy else).
    tasks: { ...config.tasks, ...(stores.idempotency === undefined ? {} : { store: stores.idempotency }) },
    ...(approvals === undefined ? {} : { approvals }),
  };
  const serve = serverMaker(serverOptions, servers);
  const served = serve(false);
  logger.info({ event: 'proxy.ready', upstream: describeUpstream(upstreamInfo), tools: names.size });

  const face = imported;
  return Object.freeze({
    server: served,
    serverFactory: (context: McpRequestContext | undefined) => serve(context?.requestInfo !== undefined),
    registry,
    dispatcher,
    approvals,
    events,
    imported: face,
    close: async () => {
      if (supervisor.closing) return;
      const stopped = supervisor.stop(face.client);
      await Promise.all([...servers, served].map((server) => server.close().catch(() => {})));
      await stopped;
    },
  });
}

function checkOptions(log: unknown, logLevel: unknown, stores: unknown): void {
  if (typeof log !== 'function') throw new TypeError('createMcpProxy() log must be a function');
  if (logLevel !== 'silent' && !levels.includes(logLevel as LogLevel)) {
    throw new TypeError(
      `createMcpProxy() logLevel must be one of debug, info, warn, error, silent, got ${String(logLevel)}`,
    );
  }
  if (typeof stores !== 'object' || stores === null) {
    throw new TypeError('createMcpProxy() stores must be an object');
  }
  rejectUnknownKeys('createMcpProxy() stores', stores, mcpProxyStoreKeys, 'store');
}

function describeUpstream(info: { name: string; version: string } | undefined): string {
  return info === undefined ? 'unknown' : `${info.name} ${info.version}`;
}

// Makes the proxy's servers: one per connection (kept, so each hears list_changed) or per HTTP
// request (not kept: it lives as long as the request).
function serverMaker(options: CreateMcpServerOptions, servers: Set<Server>): (perRequest: boolean) => Server {
  return (perRequest) => {
    const server = createMcpServer(options);
    if (perRequest) {
      servesOneHttpRequest(server);
      return server;
    }
    servers.add(server);
    const closed = server.onclose;
    server.onclose = () => {
      servers.delete(server);
      closed?.();
    };
    return server;
  };
}

// A tool's settings: its own entry under `tools` over `defaults`.
function toolSettings(config: McpProxyConfig): (upstreamName: string) => McpProxyToolConfig {
  return (upstreamName) => ({
    ...config.defaults,
    ...(config.tools !== undefined && Object.hasOwn(config.tools, upstreamName)
      ? config.tools[upstreamName]
      : {}),
  });
}

function importUpstream(
  first: McpClient,
  registry: ToolRegistry,
  supervisor: Supervisor,
  settingsOf: (upstreamName: string) => McpProxyToolConfig,
  config: McpProxyConfig,
  logger: LineLogger,
  onChange: () => void,
): Promise<ImportedMcpTools> {
  return importMcpTools(first, registry, {
    output: 'result',
    // A call long enough to be served as a task runs as one upstream too, where the upstream can.
    ...(config.tasks?.thresholdMs === undefined ? {} : { taskThresholdMs: config.tasks.thresholdMs }),
    reconnect: supervisor.restart,
    // Registry names only live inside the proxy; the wire keeps every upstream name as it is.
    rename: localNameOf,
    configure: (tool) => {
      const { timeoutMs, idempotent, task, requiresApproval } = settingsOf(tool.name);
      return {
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(idempotent === undefined ? {} : { idempotent }),
        ...(task === undefined ? {} : { task }),
        ...(requiresApproval === undefined ? {} : { requiresApproval }),
      };
    },
    onError: (error) => logger.error({ event: 'upstream.refresh_failed', message: messageOf(error) }),
    onChange,
  });
}

interface Supervisor {
  /** Set once `stop()` ran: no process starts after it. */
  readonly closing: boolean;
  /** Starts one upstream (the first, or after a crash) and watches it. */
  start(): Promise<Client>;
  /** Keeps starting one, with backoff for a server that keeps crashing, until one answers. */
  restart(): Promise<Client>;
  /** Stops restarting and closes the client given (its process ends). */
  stop(client: McpClient): Promise<void>;
}

// Starts the upstream, notices it exit, and restarts it with backoff when it keeps crashing.
function supervise(connect: () => Promise<Client>, logger: LineLogger, onExit: () => void): Supervisor {
  let closing = false;
  let startedAt = Date.now();
  let quickCrashes = 0;
  let current: Client | undefined;

  const start = async (): Promise<Client> => {
    const client = await connect();
    if (closing) {
      // The host left while this process was starting: it must not outlive the proxy.
      await client.close().catch(() => {});
      throw new Error('The proxy is closing');
    }
    startedAt = Date.now();
    current = client;
    const pid = (client.transport as { pid?: number | null } | undefined)?.pid;
    logger.info({ event: 'upstream.started', ...(typeof pid === 'number' ? { pid } : {}) });
    client.onclose = () => {
      if (closing || client !== current) return;
      const livedMs = Date.now() - startedAt;
      quickCrashes = livedMs >= stableAfterMs ? 1 : quickCrashes + 1;
      logger.warn({ event: 'upstream.exited', livedMs, restart: 'now' });
      onExit();
    };
    client.onerror = (error) => logger.debug({ event: 'upstream.error', message: error.message });
    return client;
  };

  const restart = async (): Promise<Client> => {
    for (;;) {
      if (closing) throw new Error('The proxy is closing');
      const delayMs =
        quickCrashes <= 1 ? 0 : Math.min(maxBackoffMs, firstBackoffMs * 2 ** (quickCrashes - 2));
      if (delayMs > 0) {
        logger.warn({ event: 'upstream.backoff', delayMs, crashes: quickCrashes });
        await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
      }
      try {
        return await start();
      } catch (error) {
        quickCrashes += 1;
        logger.error({ event: 'upstream.start_failed', message: messageOf(error) });
      }
    }
  };

  return {
    get closing() {
      return closing;
    },
    start,
    restart,
    stop: async (client) => {
      closing = true;
      await client.close().catch(() => {});
    },
  };
}

// The default stack with a breaker inside idempotency, each tool's own attempts, and logging.
function proxyDispatcher(
  registry: ToolRegistry,
  config: McpProxyConfig,
  stores: McpProxyStores,
  logger: LineLogger,
  logLevel: LogLevel | 'silent',
  approval: ApprovalGate | undefined,
  settingsOf: (toolName: string | undefined) => McpProxyToolConfig,
): Dispatcher {
  const mostAttempts = Math.max(
    3,
    config.defaults?.maxAttempts ?? 0,
    ...Object.values(config.tools ?? {}).map((tool) => tool.maxAttempts ?? 0),
  );
  const breaker = circuitBreaker({
    ...(config.breaker?.failureThreshold === undefined
      ? {}
      : { failureThreshold: config.breaker.failureThreshold }),
    ...(config.breaker?.cooldownMs === undefined ? {} : { cooldownMs: config.breaker.cooldownMs }),
    ...(stores.circuit === undefined ? {} : { store: stores.circuit }),
  });
  // The breaker sits between idempotency and the concurrency cap.
  const stack = defaultStack({
    registry,
    breaker,
    ...(approval === undefined ? {} : { approvals: approval }),
    ...(config.concurrency === undefined ? {} : { concurrency: { max: config.concurrency } }),
    ...(stores.idempotency === undefined ? {} : { idempotency: { store: stores.idempotency } }),
    retry: {
      maxAttempts: mostAttempts,
      shouldRetry: (error, ctx) =>
        isRetryable(error, ctx) && ctx.attempt < (settingsOf(ctx.tool?.name).maxAttempts ?? 3),
    },
  });
  const layers: Middleware[] =
    logLevel === 'silent' ? stack : [logging({ logger, level: logLevel }), ...stack];
  return createDispatcher(layers);
}

// The gate of --require-approval: by the upstream's annotations (a tool without any is gated), or
// every call; a tool's own requiresApproval, from the config, beats both.
function proxyGate(
  registry: ToolRegistry,
  mode: 'destructive' | 'all' | 'none',
  store: ApprovalStore | undefined,
): ApprovalGate | undefined {
  if (mode === 'none') return undefined;
  const shared = store === undefined ? {} : { store };
  if (mode === 'destructive') return approvalGate({ registry, ...shared });
  return approvalGate({
    registry,
    ...shared,
    decide: (call, byDefault) =>
      call.tool.requiresApproval === false
        ? byDefault
        : { action: 'require', reason: 'the proxy gates every call' },
  });
}

/**
 * The title, annotations and output schema the proxy serves for an upstream tool: the upstream's
 * as they are, except an `idempotent` the proxy's config sets, which is served as
 * `idempotentHint` since the proxy retries the tool by it.
 *
 * @example
 * servedHints(tool, settingsOf(tool.name).idempotent);
 */
function servedHints(tool: McpTool, idempotent: boolean | undefined): McpToolHints {
  return {
    ...(tool.title === undefined ? {} : { title: tool.title }),
    annotations:
      idempotent === undefined
        ? { ...tool.annotations }
        : { ...tool.annotations, idempotentHint: idempotent },
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
  };
}

/**
 * The proxy's registry name for an upstream tool name, one to one: the registry takes only
 * lowercase letters, digits, `_` and `-`, and names that differ only in case or separators
 * (`searchDocs`, `search_docs`) must never meet. `_` is written `__`, a capital `_` and its
 * lowercase letter, any other character `_<code point>_`; a name longer than 250 characters
 * that way is its SHA-256 instead.
 *
 * @example
 * localNameOf('searchDocs');  // 'usearch_docs'
 * localNameOf('search_docs'); // 'usearch__docs'
 */
export function localNameOf(upstreamName: string): string {
  let local = 'u';
  for (const char of upstreamName) {
    if (/^[a-z0-9-]$/.test(char)) local += char;
    else if (char === '_') local += '__';
    else if (/^[A-Z]$/.test(char)) local += `_${char.toLowerCase()}`;
    else local += `_${String(char.codePointAt(0))}_`;
  }
  return local.length <= 250 ? local : `h${createHash('sha256').update(upstreamName).digest('hex')}`;
}

// A per-tool setting for a tool the upstream does not have would be dropped without a word.
function checkToolNames(config: McpProxyConfig, names: ReadonlyMap<string, string>): void {
  const known = new Set(names.values());
  const unknown = Object.keys(config.tools ?? {}).filter((name) => !known.has(name));
  if (unknown.length === 0) return;
  const quoted = (list: string[]) => list.map((name) => JSON.stringify(name)).join(', ');
  const shown = [...known].slice(0, 50);
  const more = known.size > shown.length ? `, and ${known.size - shown.length} more` : '';
  throw new TypeError(
    `config.tools names ${unknown.length === 1 ? 'a tool' : 'tools'} the upstream does not have: ${quoted(unknown)}; its tools are ${known.size === 0 ? 'none' : quoted(shown) + more}`,
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function upstreamConnector(upstream: McpUpstream): () => Promise<Client> {
  if (typeof upstream !== 'object' || upstream === null) {
    throw new TypeError('createMcpProxy() upstream must be { command, args? } or { url }');
  }
  if ('url' in upstream) {
    let url: URL;
    try {
      url = new URL(upstream.url);
    } catch {
      throw new TypeError(`createMcpProxy() upstream.url must be a URL, got ${JSON.stringify(upstream.url)}`);
    }
    const headers = checkHeaders(upstream.headers);
    return negotiated(
      () => new StreamableHTTPClientTransport(url, headers === undefined ? {} : { requestInit: { headers } }),
    );
  }
  const { command, args = [], cwd, env } = upstream;
  if (typeof command !== 'string' || command === '') {
    throw new TypeError('createMcpProxy() upstream.command must be a non-empty string');
  }
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
    throw new TypeError('createMcpProxy() upstream.args must be an array of strings');
  }
  return negotiated(
    () =>
      new InPlaceStdioTransport({
        command,
        args,
        // The host configured the proxy's environment for the server behind it.
        env: env ?? inheritedEnv(),
        // The upstream's own logs go where ours do: stderr, never the protocol stream.
        stderr: 'inherit',
        ...(cwd === undefined ? {} : { cwd }),
      }),
  );
}

// Header values are secrets (a bearer token): a message names the header, never its value.
function checkHeaders(headers: unknown): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw new TypeError('createMcpProxy() upstream.headers must be an object of header names to values');
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new TypeError(
        `createMcpProxy() upstream.headers has a name that is no HTTP header name: ${logValue(name)}`,
      );
    }
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      throw new TypeError(`createMcpProxy() upstream.headers["${name}"] must be a string on one line`);
    }
  }
  return { ...(headers as Record<string, string>) };
}

// The SDK probes exactly `StdioClientTransport` on a sibling process it spawns for the purpose;
// a subclass is probed in place, on the one process we start anyway (an upstream that exits on
// the probe is restarted by the supervisor like any crash).
class InPlaceStdioTransport extends StdioClientTransport {}

// Connects with the era the upstream speaks: the first connection probes (`server/discover`,
// falling back to `initialize`), and every reconnect reuses that verdict, so a restarted stdio
// upstream is not probed by a sibling process again.
function negotiated(transport: () => Transport): () => Promise<Client> {
  let prior: PriorDiscovery | undefined;
  const connect = async (given: PriorDiscovery | undefined): Promise<Client> => {
    const client = new Client(
      { name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    const connection = transport();
    try {
      await client.connect(connection, given === undefined ? undefined : { prior: given });
    } catch (error) {
      await connection.close().catch(() => {});
      throw error;
    }
    return client;
  };
  return async () => {
    let client: Client;
    try {
      client = await connect(prior);
    } catch (error) {
      // A 2025 server may end its process on a request before `initialize` (the probe); a fresh
      // one is then asked the 2025 way, which is also how a process that cannot start says so.
      if (
        prior !== undefined ||
        !(error instanceof SdkError) ||
        error.code !== SdkErrorCode.EraNegotiationFailed
      ) {
        throw error;
      }
      client = await connect({ kind: 'legacy' });
    }
    const discover = client.getDiscoverResult();
    prior =
      client.getProtocolEra() === 'modern' && discover !== undefined
        ? { kind: 'modern', discover }
        : { kind: 'legacy' };
    return client;
  };
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return env;
}

// A logger that writes each record as one line: readable text (`level event key=value …`), or a
// JSON object in pino's shape.
type LineLogger = Logger & Record<LogLevel, (record: Record<string, unknown>) => void>;

// pino's numbers, so pino-pretty and collectors that know them read our lines.
const pinoLevels: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50 };

function lineLogger(
  log: (line: string) => void,
  level: LogLevel | 'silent',
  format: 'text' | 'json',
  upstreamName: (toolName: string) => string,
): LineLogger {
  const lowest = level === 'silent' ? levels.length : levels.indexOf(level);
  const show = (key: string, value: unknown): string => {
    if (typeof value === 'number') return String(Math.round(value));
    if (key === 'tool' && typeof value === 'string') return logValue(upstreamName(value));
    return logValue(typeof value === 'string' ? value : jsonOf(value));
  };
  const write = (at: LogLevel) => (record: Record<string, unknown>) => {
    if (levels.indexOf(at) < lowest) return;
    const { event, ...details } = record;
    if (format === 'json') {
      const named = typeof details['tool'] === 'string' ? { tool: upstreamName(details['tool']) } : {};
      const line = jsonOf({
        level: pinoLevels[at],
        time: Date.now(),
        msg: String(event),
        ...details,
        ...named,
      });
      try {
        // JSON escapes line breaks but not U+2028/U+2029, which some readers split lines on.
        log(line.replace(/[\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16)}`));
      } catch {
        // A log line that cannot be written never fails a call.
      }
      return;
    }
    const fields = Object.entries(details)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => `${logValue(key)}=${show(key, value)}`);
    try {
      log([`[mcp-proxy] ${at}`, logValue(String(event)), ...fields].join(' '));
    } catch {
      // A log line that cannot be written never fails a call.
    }
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

/**
 * A value as a log line writes it: bare when it cannot be read as more than one field or line,
 * else a JSON string with every control, format and line-separator character escaped, so no
 * value a client sends (a tool name, an argument quoted in a message) can forge a record.
 *
 * @example
 * logValue('echoText');        // 'echoText'
 * logValue('x\n[mcp-proxy] error'); // '"x\\n[mcp-proxy] error"'
 */
export function logValue(text: string): string {
  if (/^[^\s"=\\\p{C}]+$/u.test(text)) return text;
  // JSON.stringify escapes C0 controls only; DEL, C1 controls (a terminal's CSI), bidi marks
  // and U+2028/U+2029 would pass through it.
  return JSON.stringify(text).replace(/[\p{C}\u2028\u2029]/gu, (char) =>
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`,
    ).join(''),
  );
}

function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
