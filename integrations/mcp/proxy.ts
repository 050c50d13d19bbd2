// The resilience proxy: an upstream MCP server's tools, served again through the dispatcher.

import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  ToolRegistry,
  circuitBreaker,
  createDispatcher,
  defaultStack,
  isRetryable,
  logging,
  type Dispatcher,
  type Logger,
  type LogLevel,
  type Middleware,
} from '../../index.js';
import { importMcpTools, type ImportedMcpTools } from './client.js';
import { createMcpServer } from './server.js';

/** Settings of one tool, or the defaults of every tool. */
export interface McpProxyToolConfig {
  /** Per-attempt timeout in milliseconds. */
  timeoutMs?: number;
  /** Attempts in total for a retryable failure (1 = never retried). */
  maxAttempts?: number;
  /** Whether running it twice is harmless: timeouts are then retried too. */
  idempotent?: boolean;
}

/** The proxy's settings, as the `--config` file holds them. */
export interface McpProxyConfig {
  /** Settings of every tool. */
  defaults?: McpProxyToolConfig;
  /** Settings of single tools, by upstream name; they win over `defaults`. */
  tools?: Record<string, McpProxyToolConfig>;
  /** Calls running upstream at once; the rest queue in order. */
  concurrency?: number;
  /** The circuit breaker in front of each tool. */
  breaker?: { failureThreshold?: number; cooldownMs?: number };
}

/** Where the upstream MCP server is: a command to start (stdio) or a Streamable HTTP URL. */
export type McpUpstream =
  | { command: string; args?: string[]; cwd?: string; env?: Record<string, string> }
  | { url: string };

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
   * The name and version the proxy reports to its client.
   * @default { name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' }
   */
  info?: { name: string; version: string };
}

/** A running proxy: serve `server` over a transport, `close()` to stop the upstream. */
export interface McpProxy {
  /** The MCP server to connect to the host's transport (stdio for the command). */
  readonly server: Server;
  /** The registry of imported upstream tools. */
  readonly registry: ToolRegistry;
  /** The dispatcher every call goes through. */
  readonly dispatcher: Dispatcher;
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
 * and are retried, calls that arrive meanwhile wait for the new process within their deadline.
 *
 * @example
 * const proxy = await createMcpProxy({ upstream: { command: 'node', args: ['server.js'] },
 *   config: { defaults: { timeoutMs: 10_000 } }, logLevel: 'info' });
 * await proxy.server.connect(new StdioServerTransport());
 */
export async function createMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('createMcpProxy() needs an options object with an upstream');
  }
  const {
    upstream,
    config = {},
    log = (line: string) => void process.stderr.write(`${line}\n`),
    logLevel = 'warn',
    info = { name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' },
  } = options;
  const connect = upstreamConnector(upstream);
  checkConfig(config);
  if (typeof log !== 'function') throw new TypeError('createMcpProxy() log must be a function');
  if (logLevel !== 'silent' && !levels.includes(logLevel)) {
    throw new TypeError(
      `createMcpProxy() logLevel must be one of debug, info, warn, error, silent, got ${String(logLevel)}`,
    );
  }
  // Log lines name tools as the host knows them: by their upstream names.
  const logger = lineLogger(log, logLevel, (toolName) => imported?.names.get(toolName) ?? toolName);
  const settingsOf = (upstreamName: string): McpProxyToolConfig => ({
    ...config.defaults,
    ...(config.tools !== undefined && Object.hasOwn(config.tools, upstreamName)
      ? config.tools[upstreamName]
      : {}),
  });

  let closing = false;
  let startedAt = Date.now();
  let quickCrashes = 0;
  let current: Client | undefined;
  let imported: ImportedMcpTools | undefined;
  let server: Server | undefined;

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
      imported?.reconnect().catch(() => {
        // Logged by the import's onError; calls waiting for it fail transient.
      });
    };
    client.onerror = (error) => logger.debug({ event: 'upstream.error', message: error.message });
    return client;
  };

  // Keeps trying until an upstream answers `initialize` or the proxy closes.
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
        logger.error({
          event: 'upstream.start_failed',
          message: error instanceof Error ? error.message : String(error),
        });
      }
    }
  };

  const first = await start();
  const registry = new ToolRegistry();
  imported = await importMcpTools(first, registry, {
    output: 'result',
    reconnect: restart,
    // Every upstream name must survive as a registry name; the wire keeps the upstream's own.
    configure: (tool) => {
      const { timeoutMs, idempotent } = settingsOf(tool.name);
      return {
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(idempotent === undefined ? {} : { idempotent }),
      };
    },
    onError: (error) =>
      logger.error({
        event: 'upstream.refresh_failed',
        message: error instanceof Error ? error.message : String(error),
      }),
    onChange: () => {
      server?.sendToolListChanged().catch(() => {
        // Not connected yet, or the host has gone: nobody to tell.
      });
    },
  });
  const names = imported.names;

  const attemptsOf = (toolName: string | undefined): number =>
    settingsOf((toolName === undefined ? undefined : names.get(toolName)) ?? '').maxAttempts ?? 3;
  const mostAttempts = Math.max(
    3,
    config.defaults?.maxAttempts ?? 0,
    ...Object.values(config.tools ?? {}).map((tool) => tool.maxAttempts ?? 0),
  );
  const stack = defaultStack({
    registry,
    ...(config.concurrency === undefined ? {} : { concurrency: { max: config.concurrency } }),
    retry: {
      maxAttempts: mostAttempts,
      shouldRetry: (error, ctx) => isRetryable(error, ctx) && ctx.attempt < attemptsOf(ctx.tool?.name),
    },
  });
  const breaker = circuitBreaker({
    ...(config.breaker?.failureThreshold === undefined
      ? {}
      : { failureThreshold: config.breaker.failureThreshold }),
    ...(config.breaker?.cooldownMs === undefined ? {} : { cooldownMs: config.breaker.cooldownMs }),
  });
  stack.splice(
    stack.findIndex((layer) => layer.name === 'concurrencyLimit'),
    0,
    breaker,
  );
  const layers: Middleware[] =
    logLevel === 'silent' ? stack : [logging({ logger, level: logLevel }), ...stack];
  const dispatcher = createDispatcher(layers);

  const upstreamInfo = first.getServerVersion();
  const instructions = first.getInstructions();
  server = createMcpServer({
    registry,
    dispatcher,
    names,
    info,
    ...(instructions === undefined ? {} : { instructions }),
    hints: (toolName) => {
      const tool = imported?.tools.get(toolName);
      if (tool === undefined) return undefined;
      const { readOnlyHint, destructiveHint, openWorldHint } = tool.annotations ?? {};
      return {
        ...(tool.title === undefined ? {} : { title: tool.title }),
        ...(readOnlyHint === undefined ? {} : { readOnlyHint }),
        ...(destructiveHint === undefined ? {} : { destructiveHint }),
        ...(openWorldHint === undefined ? {} : { openWorldHint }),
        ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
      };
    },
    // The upstream's own result, content blocks and all, goes back as it came.
    formatResult: (result) => result as CallToolResult,
  });
  logger.info({
    event: 'proxy.ready',
    upstream: upstreamInfo === undefined ? 'unknown' : `${upstreamInfo.name} ${upstreamInfo.version}`,
    tools: names.size,
  });

  const served = server;
  return Object.freeze({
    server: served,
    registry,
    dispatcher,
    imported,
    close: async () => {
      if (closing) return;
      closing = true;
      await served.close().catch(() => {});
      await imported?.client.close().catch(() => {});
    },
  });
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
    return async () => {
      const client = new Client({ name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' });
      await client.connect(new StreamableHTTPClientTransport(url));
      return client;
    };
  }
  const { command, args = [], cwd, env } = upstream;
  if (typeof command !== 'string' || command === '') {
    throw new TypeError('createMcpProxy() upstream.command must be a non-empty string');
  }
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
    throw new TypeError('createMcpProxy() upstream.args must be an array of strings');
  }
  return async () => {
    const client = new Client({ name: 'tool-dispatcher-mcp-proxy', version: '0.1.0' });
    const transport = new StdioClientTransport({
      command,
      args,
      // The host configured the proxy's environment for the server behind it.
      env: env ?? inheritedEnv(),
      // The upstream's own logs go where ours do: stderr, never the protocol stream.
      stderr: 'inherit',
      ...(cwd === undefined ? {} : { cwd }),
    });
    try {
      await client.connect(transport);
    } catch (error) {
      await transport.close().catch(() => {});
      throw error;
    }
    return client;
  };
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return env;
}

const toolKeys = new Set(['timeoutMs', 'maxAttempts', 'idempotent']);

/**
 * Throws a TypeError naming the first bad setting of a proxy config (unknown keys included).
 *
 * @example
 * checkConfig(JSON.parse(readFileSync('proxy.json', 'utf8')));
 */
export function checkConfig(config: unknown): asserts config is McpProxyConfig {
  const object = (value: unknown, where: string): Record<string, unknown> => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new TypeError(`${where} must be an object`);
    }
    return value as Record<string, unknown>;
  };
  const tool = (value: unknown, where: string): void => {
    const settings = object(value, where);
    for (const key of Object.keys(settings)) {
      if (!toolKeys.has(key))
        throw new TypeError(`${where}.${key} is not a setting (use timeoutMs, maxAttempts, idempotent)`);
    }
    const { timeoutMs, maxAttempts, idempotent } = settings;
    if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
      throw new TypeError(`${where}.timeoutMs must be a number > 0, got ${JSON.stringify(timeoutMs)}`);
    }
    if (maxAttempts !== undefined && !(Number.isInteger(maxAttempts) && (maxAttempts as number) >= 1)) {
      throw new TypeError(`${where}.maxAttempts must be an integer >= 1, got ${JSON.stringify(maxAttempts)}`);
    }
    if (idempotent !== undefined && typeof idempotent !== 'boolean') {
      throw new TypeError(`${where}.idempotent must be a boolean, got ${JSON.stringify(idempotent)}`);
    }
  };
  const root = object(config, 'config');
  for (const key of Object.keys(root)) {
    if (!['defaults', 'tools', 'concurrency', 'breaker'].includes(key)) {
      throw new TypeError(`config.${key} is not a setting (use defaults, tools, concurrency, breaker)`);
    }
  }
  if (root['defaults'] !== undefined) tool(root['defaults'], 'config.defaults');
  if (root['tools'] !== undefined) {
    for (const [name, settings] of Object.entries(object(root['tools'], 'config.tools'))) {
      tool(settings, `config.tools[${JSON.stringify(name)}]`);
    }
  }
  const { concurrency, breaker } = root;
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && (concurrency as number) >= 1)) {
    throw new TypeError(`config.concurrency must be an integer >= 1, got ${JSON.stringify(concurrency)}`);
  }
  if (breaker !== undefined) {
    const { failureThreshold, cooldownMs, ...rest } = object(breaker, 'config.breaker');
    const extra = Object.keys(rest)[0];
    if (extra !== undefined)
      throw new TypeError(`config.breaker.${extra} is not a setting (use failureThreshold, cooldownMs)`);
    if (
      failureThreshold !== undefined &&
      !(Number.isInteger(failureThreshold) && (failureThreshold as number) >= 1)
    ) {
      throw new TypeError(
        `config.breaker.failureThreshold must be an integer >= 1, got ${JSON.stringify(failureThreshold)}`,
      );
    }
    if (cooldownMs !== undefined && !(typeof cooldownMs === 'number' && cooldownMs >= 0)) {
      throw new TypeError(
        `config.breaker.cooldownMs must be a number >= 0, got ${JSON.stringify(cooldownMs)}`,
      );
    }
  }
}

// A logger that writes each record as one readable line: `level event key=value …`.
type LineLogger = Logger & Record<LogLevel, (record: Record<string, unknown>) => void>;

function lineLogger(
  log: (line: string) => void,
  level: LogLevel | 'silent',
  upstreamName: (toolName: string) => string,
): LineLogger {
  const lowest = level === 'silent' ? levels.length : levels.indexOf(level);
  const show = (key: string, value: unknown): string => {
    if (key === 'tool' && typeof value === 'string') return upstreamName(value);
    if (typeof value === 'number') return String(Math.round(value));
    return typeof value === 'string' && value !== '' && !/\s/.test(value) ? value : JSON.stringify(value);
  };
  const write = (at: LogLevel) => (record: Record<string, unknown>) => {
    if (levels.indexOf(at) < lowest) return;
    const { event, ...details } = record;
    const fields = Object.entries(details)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => `${key}=${show(key, value)}`);
    try {
      log([`[mcp-proxy] ${at}`, String(event), ...fields].join(' '));
    } catch {
      // A log line that cannot be written never fails a call.
    }
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
