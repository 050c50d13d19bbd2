/**
 * The proxy's settings: their types and the check of a `--config` file, apart from proxy.ts so that
 * the command line is parsed (and `--help` answered) without loading the MCP SDK.
 * @module
 */

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

/** The proxy's settings, as the `--config` file holds them. */
export interface McpProxyConfig {
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
    };

const toolKeys = new Set(['timeoutMs', 'maxAttempts', 'idempotent', 'task', 'requiresApproval']);
const taskKeys = ['thresholdMs', 'pollIntervalMs', 'ttlMs'];

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
        throw new TypeError(
          `${where}.${key} is not a setting (use timeoutMs, maxAttempts, idempotent, task, requiresApproval)`,
        );
    }
    const { timeoutMs, maxAttempts, idempotent, task, requiresApproval } = settings;
    if (task !== undefined && typeof task !== 'boolean') {
      throw new TypeError(`${where}.task must be a boolean, got ${JSON.stringify(task)}`);
    }
    if (requiresApproval !== undefined && typeof requiresApproval !== 'boolean') {
      throw new TypeError(
        `${where}.requiresApproval must be a boolean, got ${JSON.stringify(requiresApproval)}`,
      );
    }
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
    if (!['defaults', 'tools', 'concurrency', 'breaker', 'tasks', 'requireApproval'].includes(key)) {
      throw new TypeError(
        `config.${key} is not a setting (use defaults, tools, concurrency, breaker, tasks, requireApproval)`,
      );
    }
  }
  const { requireApproval } = root;
  if (requireApproval !== undefined && !['destructive', 'all', 'none'].includes(requireApproval as string)) {
    throw new TypeError(
      `config.requireApproval must be destructive, all or none, got ${JSON.stringify(requireApproval)}`,
    );
  }
  if (root['defaults'] !== undefined) tool(root['defaults'], 'config.defaults');
  if (root['tools'] !== undefined) {
    for (const [name, settings] of Object.entries(object(root['tools'], 'config.tools'))) {
      tool(settings, `config.tools[${JSON.stringify(name)}]`);
    }
  }
  if (root['tasks'] !== undefined) checkTasks(object(root['tasks'], 'config.tasks'));
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

function checkTasks(tasks: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(tasks)) {
    if (!taskKeys.includes(key)) {
      throw new TypeError(`config.tasks.${key} is not a setting (use ${taskKeys.join(', ')})`);
    }
    if (!(Number.isInteger(value) && (value as number) > 0)) {
      throw new TypeError(`config.tasks.${key} must be a positive integer, got ${JSON.stringify(value)}`);
    }
  }
}
