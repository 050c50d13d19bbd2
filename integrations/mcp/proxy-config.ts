/**
 * The proxy's settings: their types, the zod schema of a `--config` file (published as JSON Schema
 * in `mcp-proxy.schema.json`) and its check, apart from proxy.ts so that the command line is parsed
 * (and `--help` answered) without loading the MCP SDK.
 * @module
 */

import { z } from 'zod';

/** Settings of one tool, or the defaults of every tool. */
export interface McpProxyToolConfig {
  /** Per-attempt timeout in milliseconds. */
  timeoutMs?: number;
  /** Attempts in total for a retryable failure (1 = never retried). */
  maxAttempts?: number;
  /** Whether running it twice is harmless: timeouts are then retried too. */
  idempotent?: boolean;
  /** Whether 2026-07-28 clients that declare Tasks get a task handle for it whatever its timeout. */
  task?: boolean;
  /** Whether a call needs approval; beats the upstream's annotations (`--require-approval`). */
  requiresApproval?: boolean;
}

/** How the proxy serves MCP Tasks to 2026-07-28 clients that declare the extension. */
export interface McpProxyTasksConfig {
  /** Tools whose timeout exceeds this many milliseconds answer with a task (default 60000). */
  thresholdMs?: number;
  /** The poll interval handles ask for, in milliseconds (default 1000). */
  pollIntervalMs?: number;
  /** How long a task is kept, in milliseconds (default 3600000). */
  ttlMs?: number;
}

/**
 * One entry of a host's `mcpServers` (Claude Desktop, Cursor, VS Code, Claude Code): a command to
 * start, or a Streamable HTTP URL. Keys a host adds of its own (`disabled`, `autoApprove`, …) are
 * let through; `${VAR}` in `env` values and `headers` reads the proxy's environment.
 */
export interface McpServerEntry {
  /** The transport; inferred from `command` or `url` when absent. */
  type?: 'stdio' | 'http' | 'streamable-http';
  /** The program to start (stdio). */
  command?: string;
  /** Its arguments. */
  args?: string[];
  /** Environment variables set for it, over the proxy's own. */
  env?: Record<string, string>;
  /** Its working directory. */
  cwd?: string;
  /** A Streamable HTTP upstream instead of a command. */
  url?: string;
  /** Headers sent on every request to `url`; never printed. */
  headers?: Record<string, string>;
  /** A host's keys of its own (`disabled`, `autoApprove`, …): kept, not read. */
  [hostKey: string]: unknown;
}

/** The proxy's settings, as the `--config` file holds them. */
export interface McpProxyConfig {
  /** The JSON Schema the file is written against (`tool-dispatcher/mcp-proxy.schema.json`); not read. */
  $schema?: string;
  /**
   * The upstream in the shape hosts use, by name: the command line reads it when given no
   * upstream of its own (`--server <name>` picks one of several). `createMcpProxy` takes its
   * `upstream` option instead.
   */
  mcpServers?: Record<string, McpServerEntry>;
  /** Settings of every tool. */
  defaults?: McpProxyToolConfig;
  /** Settings of single tools, by upstream name; they win over `defaults`. */
  tools?: Record<string, McpProxyToolConfig>;
  /** Calls running upstream at once; the rest queue in order. */
  concurrency?: number;
  /** The circuit breaker in front of each tool. */
  breaker?: {
    /** Failures in a row that open the breaker. */
    failureThreshold?: number;
    /** How long an open breaker refuses calls before it lets one through. */
    cooldownMs?: number;
  };
  /** MCP Tasks for long tools (2026-07-28 clients only). */
  tasks?: McpProxyTasksConfig;
  /**
   * Which calls wait for the user's approval: `destructive` (by the upstream's annotations, a
   * tool without any included), `all`, or `none`. A tool's `requiresApproval` beats it.
   * @default 'none'
   */
  requireApproval?: 'destructive' | 'all' | 'none';
}

/** Where the upstream MCP server is: a command to start (stdio) or a Streamable HTTP URL. */
export type McpUpstream =
  | {
      /** The command that starts the upstream server, speaking MCP on its stdin and stdout. */
      command: string;
      /** The command's arguments. */
      args?: string[];
      /** The folder the command runs in. */
      cwd?: string;
      /** Environment variables for the command. */
      env?: Record<string, string>;
    }
  | {
      /** The upstream's Streamable HTTP endpoint. */
      url: string;
      /**
       * Headers sent on every request to it (`Authorization: Bearer …`); never logged or quoted
       * in an error.
       */
      headers?: Record<string, string>;
    };

const toolSchema = z.strictObject({
  timeoutMs: z
    .number({ error: 'must be a number > 0' })
    .positive({ error: 'must be a number > 0' })
    .optional()
    .describe('Per-attempt timeout in milliseconds.'),
  maxAttempts: z
    .int({ error: 'must be an integer >= 1' })
    .min(1, { error: 'must be an integer >= 1' })
    .optional()
    .describe('Attempts in total for a retryable failure (1 = never retried).'),
  idempotent: z
    .boolean({ error: 'must be a boolean' })
    .optional()
    .describe('Whether running it twice is harmless: timeouts are then retried too.'),
  task: z
    .boolean({ error: 'must be a boolean' })
    .optional()
    .describe('Whether 2026-07-28 clients that declare Tasks get a task handle whatever its timeout.'),
  requiresApproval: z
    .boolean({ error: 'must be a boolean' })
    .optional()
    .describe("Whether a call needs approval; beats the upstream's annotations."),
});

const positiveInteger = (description: string) =>
  z
    .int({ error: 'must be a positive integer' })
    .min(1, { error: 'must be a positive integer' })
    .optional()
    .describe(description);

const tasksSchema = z.strictObject({
  thresholdMs: positiveInteger('Tools whose timeout exceeds this many milliseconds answer with a task.'),
  pollIntervalMs: positiveInteger('The poll interval handles ask for, in milliseconds.'),
  ttlMs: positiveInteger('How long a task is kept, in milliseconds.'),
});

const breakerSchema = z.strictObject({
  failureThreshold: z
    .int({ error: 'must be an integer >= 1' })
    .min(1, { error: 'must be an integer >= 1' })
    .optional()
    .describe("Failures that open a tool's circuit."),
  cooldownMs: z
    .number({ error: 'must be a number >= 0' })
    .min(0, { error: 'must be a number >= 0' })
    .optional()
    .describe('How long it stays open, in milliseconds.'),
});

const stringMap = z.record(z.string(), z.string({ error: 'must be a string' }), {
  error: 'must be an object of strings',
});

// Loose: a host's own file carries keys of its own, and the proxy should read it unchanged.
const serverSchema = z
  .looseObject({
    type: z
      .enum(['stdio', 'http', 'streamable-http'], { error: 'must be stdio, http or streamable-http' })
      .optional(),
    command: z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must be a non-empty string' })
      .optional(),
    args: z
      .array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' })
      .optional(),
    env: stringMap.optional().describe("Set for the command, over the proxy's own environment."),
    cwd: z.string({ error: 'must be a string' }).optional(),
    url: z.url({ error: 'must be a URL' }).optional().describe('A Streamable HTTP upstream.'),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the syntax the user writes, not a placeholder
    headers: stringMap.optional().describe('Sent on every request to url; ${VAR} reads the environment.'),
  })
  .describe('An upstream MCP server, as hosts write it in mcpServers: a command, or a url.');

const configSchema = z
  .strictObject({
    $schema: z.string({ error: 'must be a string' }).optional().describe('The JSON Schema of this file.'),
    mcpServers: z
      .record(z.string(), serverSchema, { error: 'must be an object' })
      .optional()
      .describe('The upstream, in the shape hosts use; --server <name> picks one of several.'),
    defaults: toolSchema.optional().describe('Settings of every tool.'),
    tools: z
      .record(z.string(), toolSchema, { error: 'must be an object' })
      .optional()
      .describe('Settings of single tools, by upstream name; they win over defaults.'),
    concurrency: z
      .int({ error: 'must be an integer >= 1' })
      .min(1, { error: 'must be an integer >= 1' })
      .optional()
      .describe('Calls running upstream at once; the rest queue in order.'),
    breaker: breakerSchema.optional().describe('The circuit breaker in front of each tool.'),
    tasks: tasksSchema.optional().describe('MCP Tasks for long tools (2026-07-28 clients only).'),
    requireApproval: z
      .enum(['destructive', 'all', 'none'], { error: 'must be destructive, all or none' })
      .optional()
      .describe("Which calls wait for the user's approval."),
  })
  .meta({ title: 'tool-dispatcher mcp-proxy config' });

/**
 * The zod schema of the proxy's settings (the `--config` file): `checkConfig` parses with it, and
 * `mcp-proxy.schema.json` in the package is its JSON Schema (`z.toJSONSchema`).
 *
 * @example
 * const jsonSchema = z.toJSONSchema(mcpProxyConfigSchema, { io: 'input' });
 * mcpProxyConfigSchema.parse(JSON.parse(readFileSync('proxy.json', 'utf8')));
 */
// Typed by the interface, not zod's inferred object: the API reference shows McpProxyConfig.
export const mcpProxyConfigSchema: z.ZodType<McpProxyConfig> = configSchema as z.ZodType<McpProxyConfig>;

/**
 * The JSON Schema of the proxy's config file, as `mcp-proxy.schema.json` in the package holds it:
 * `z.toJSONSchema` of `mcpProxyConfigSchema`, for the input a user writes.
 *
 * @example
 * writeFileSync('mcp-proxy.schema.json', JSON.stringify(mcpProxyJsonSchema(), null, 2));
 */
export function mcpProxyJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(mcpProxyConfigSchema, { io: 'input', target: 'draft-2020-12' });
}

// A compile-time check that the interface and the schema name the same settings and the schema
// accepts every McpProxyConfig (zod's optionals also take `undefined`, which no JSON file holds).
type SchemaInput = z.input<typeof configSchema>;
type SchemaMatchesConfig = [keyof McpProxyConfig] extends [keyof SchemaInput]
  ? [keyof SchemaInput] extends [keyof McpProxyConfig]
    ? McpProxyConfig extends SchemaInput
      ? true
      : never
    : never
  : never;
const schemaMatchesConfig: SchemaMatchesConfig = true;
void schemaMatchesConfig;

// The keys each object of the file takes, for "is not a setting (use …)".
function keysAt(path: readonly PropertyKey[]): string[] {
  const [first] = path;
  if (path.length === 0) return Object.keys(configSchema.shape);
  if (first === 'breaker') return Object.keys(breakerSchema.shape);
  if (first === 'tasks') return Object.keys(tasksSchema.shape);
  return Object.keys(toolSchema.shape);
}

// `config.tools["x"].timeoutMs`: record keys (names the user chose) quoted, settings dotted.
function where(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) =>
      i === 1 && (path[0] === 'tools' || path[0] === 'mcpServers')
        ? `[${JSON.stringify(String(key))}]`
        : `.${String(key)}`,
    )
    .reduce((text, part) => text + part, 'config');
}

/**
 * Throws a TypeError naming the first bad setting of a proxy config (unknown keys included),
 * checked against `mcpProxyConfigSchema`.
 *
 * @example
 * checkConfig(JSON.parse(readFileSync('proxy.json', 'utf8')));
 */
export function checkConfig(config: unknown): asserts config is McpProxyConfig {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new TypeError('config must be an object');
  }
  const parsed = configSchema.safeParse(config, { reportInput: true });
  if (parsed.success) return;
  const [issue] = parsed.error.issues;
  if (issue === undefined) return;
  if (issue.code === 'unrecognized_keys') {
    throw new TypeError(
      `${where([...issue.path, issue.keys[0] as string])} is not a setting (use ${keysAt(issue.path).join(', ')})`,
    );
  }
  const got = 'input' in issue && issue.input !== undefined ? `, got ${JSON.stringify(issue.input)}` : '';
  throw new TypeError(`${where(issue.path)} ${issue.message}${got}`);
}
