/**
 * The `mcp-proxy` command line: flags, the --config file under them, and the usage text.
 * @module
 */

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { LogLevel } from '../../index.js';
import { checkConfig, type McpProxyConfig, type McpUpstream } from './proxy-config.js';
import { listenUrl } from './listen-url.js';
import { maskedUrl } from './masked-url.js';

/** The usage text of `tool-dispatcher mcp-proxy`. */
export const usage = `Usage: tool-dispatcher mcp-proxy [options] -- <command> [args...]
       tool-dispatcher mcp-proxy [options] --upstream-url <url>

Serves the upstream MCP server's tools over stdio (or Streamable HTTP with --listen) to
2025-11-25 and 2026-07-28 clients, each under its own name, through timeouts, retries, dedupe by
_meta["tool-dispatcher/idempotencyKey"], a concurrency cap and a breaker.

Options (each wins over the same setting in --config):
  --config <file>                    JSON: { defaults, tools: { <name>: {...} }, concurrency, breaker,
                                     mcpServers } (JSON Schema: tool-dispatcher/mcp-proxy.schema.json);
                                     with no upstream on the command line, its mcpServers entry
                                     { command, args, env } or { url, headers } is the upstream
  --server <name>                    which mcpServers entry, when the file has several
  --upstream-url <url>               a Streamable HTTP upstream instead of a command
  --header '<Name>: <value>'         a header sent on every request to --upstream-url (repeatable);
                                     \${VAR} in the value reads the environment; values are never
                                     printed
  --listen http://<host>:<port>/<path>
                                     serve Streamable HTTP there instead of stdio (port 0: any free
                                     port; stdin is not read; SIGTERM stops); once ready, one stderr
                                     line: "mcp-proxy listening on <url>"; GET /healthz
                                     answers 200 {"status":"ok"}
  --console                          serve the control room (pending approvals, tool health) at
                                     /console on the --listen listener; its token comes from the
                                     TD_CONSOLE_TOKEN environment variable (16+ characters) and is
                                     never printed; once ready, one stderr line: "mcp-proxy console
                                     at <url>"
  --redis-url redis://<host>:<port>  keep dedupe, MCP Tasks, breaker state and paused approvals on
                                     Redis, shared by every proxy given the same URL and prefix (a
                                     fleet); needs the
                                     "redis" (or "ioredis") package
                                     (default: the REDIS_URL environment variable, when set)
  --redis-prefix <p>                 the Redis key namespace (default "td")
  --timeout-ms <n>                   per-attempt timeout of every tool (default 30000)
  --max-attempts <n>                 attempts for retryable failures (default 3)
  --idempotent                       treat every tool as idempotent (timeouts are retried)
  --concurrency <n>                  upstream calls at once (default 8)
  --breaker-failure-threshold <n>    failures that open a tool's circuit (default 5)
  --breaker-cooldown-ms <n>          how long it stays open (default 30000)
  --task-threshold-ms <n>            MCP Tasks for tools whose timeout exceeds n (default 60000;
                                     2026-07-28 clients that declare the extension only)
  --task-poll-interval-ms <n>        the poll interval task handles ask for (default 1000)
  --task-ttl-ms <n>                  how long a task is kept (default 3600000)
  --require-approval <mode>          destructive | all | none: which calls the user approves first
                                     (by elicitation; else the call is refused) (default none)
  --log-level <level>                debug | info | warn | error | silent (default warn); logs go to stderr
  --log-format <format>              text | json: json writes one object a line in pino's shape
                                     ({"level":30,"time":<ms>,"msg":"<event>",...}) (default text)
  -v, --version                      the version of tool-dispatcher
  -h, --help                         this text
`;

const proxyFlags = {
  config: { type: 'string' },
  'upstream-url': { type: 'string' },
  header: { type: 'string', multiple: true },
  server: { type: 'string' },
  listen: { type: 'string' },
  console: { type: 'boolean' },
  'redis-url': { type: 'string' },
  'redis-prefix': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'max-attempts': { type: 'string' },
  idempotent: { type: 'boolean' },
  concurrency: { type: 'string' },
  'breaker-failure-threshold': { type: 'string' },
  'breaker-cooldown-ms': { type: 'string' },
  'require-approval': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'task-threshold-ms': { type: 'string' },
  'task-poll-interval-ms': { type: 'string' },
  'task-ttl-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** What the command line asks for, with the config file merged under the flags. */
export interface ProxyCommand {
  /** The upstream server. */
  upstream: McpUpstream;
  /** The merged settings. */
  config: McpProxyConfig;
  /** The log level. */
  logLevel: LogLevel | 'silent';
  /** How log records are written. */
  logFormat: 'text' | 'json';
  /** Where to serve Streamable HTTP instead of stdio, when given. */
  listen?: string;
  /** The Redis a fleet shares, when given. */
  redis?: { url: string; prefix: string };
  /** The console on the listener (`--console`), with its token from `TD_CONSOLE_TOKEN`; never printed. */
  console?: { token: string };
}

/** The environment variable `--console` reads its token from. */
export const consoleTokenVariable = 'TD_CONSOLE_TOKEN';

/**
 * Parses `mcp-proxy`'s arguments (without the subcommand); a flag wins over the same setting of
 * the `--config` file. `env` supplies `REDIS_URL` (when `--redis-url` is absent), the
 * `${VAR}` values of `--header` and `TD_CONSOLE_TOKEN` (for `--console`).
 *
 * @throws TypeError with a message fit for the user on a bad flag, file or setting.
 * @example
 * parseProxyArgs(['--timeout-ms', '5000', '--', 'node', 'server.js']);
 */
export function parseProxyArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): ProxyCommand {
  const split = argv.indexOf('--');
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  const { values, positionals } = parseFlags(own);
  if (values.help === true) throw new HelpRequested();
  if (values.version === true) throw new VersionRequested();
  if (positionals.length > 0) {
    throw new TypeError(`Unexpected argument "${positionals[0]}": put the upstream command after --`);
  }

  const file = values.config === undefined ? {} : readConfig(values.config);
  // The upstream comes from the file's host-shaped entry only: the proxy settings stay as they were.
  const { mcpServers, $schema: _schema, ...fileSettings } = file;
  const defaults = { ...file.defaults };
  if (values['timeout-ms'] !== undefined) defaults.timeoutMs = numberFlag('timeout-ms', values['timeout-ms']);
  if (values['max-attempts'] !== undefined)
    defaults.maxAttempts = numberFlag('max-attempts', values['max-attempts']);
  if (values.idempotent === true) defaults.idempotent = true;
  const breaker = { ...file.breaker };
  if (values['breaker-failure-threshold'] !== undefined) {
    breaker.failureThreshold = numberFlag('breaker-failure-threshold', values['breaker-failure-threshold']);
  }
  if (values['breaker-cooldown-ms'] !== undefined) {
    breaker.cooldownMs = numberFlag('breaker-cooldown-ms', values['breaker-cooldown-ms']);
  }
  const tasks = { ...file.tasks };
  for (const [flag, key] of [
    ['task-threshold-ms', 'thresholdMs'],
    ['task-poll-interval-ms', 'pollIntervalMs'],
    ['task-ttl-ms', 'ttlMs'],
  ] as const) {
    const text = values[flag];
    if (text !== undefined) tasks[key] = positiveIntegerFlag(flag, text);
  }
  const requireApproval = values['require-approval'] ?? file.requireApproval;
  const config: McpProxyConfig = {
    ...fileSettings,
    defaults,
    breaker,
    ...(Object.keys(tasks).length === 0 ? {} : { tasks }),
    ...(requireApproval === undefined
      ? {}
      : { requireApproval: requireApproval as 'destructive' | 'all' | 'none' }),
    ...(values.concurrency === undefined
      ? {}
      : { concurrency: numberFlag('concurrency', values.concurrency) }),
  };
  try {
    checkConfig(config);
  } catch (error) {
    throw new TypeError(`Invalid setting: ${(error as Error).message}`);
  }

  const url = values['upstream-url'];
  if (url !== undefined && command.length > 0) {
    throw new TypeError('Give either --upstream-url or a command after --, not both');
  }
  const [program, ...args] = command;
  const headers = headerFlags(values.header ?? [], env);
  if (headers !== undefined && url === undefined) throw new TypeError('--header needs --upstream-url');
  if (values.server !== undefined && (url !== undefined || program !== undefined)) {
    throw new TypeError('Give either --server or an upstream on the command line, not both');
  }
  const upstream: McpUpstream | undefined =
    url !== undefined
      ? { url, ...(headers === undefined ? {} : { headers }) }
      : program !== undefined
        ? { command: program, args }
        : serverEntry(mcpServers, values.server, env);
  if (upstream === undefined) {
    throw new TypeError(
      'No upstream: give a command after --, --upstream-url <url>, or a --config with mcpServers',
    );
  }

  const logLevel = values['log-level'] ?? 'warn';
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) {
    throw new TypeError(`--log-level must be debug, info, warn, error or silent, got "${logLevel}"`);
  }
  const logFormat = values['log-format'] ?? 'text';
  if (logFormat !== 'text' && logFormat !== 'json') {
    throw new TypeError(`--log-format must be text or json, got "${logFormat}"`);
  }
  const listen = values.listen;
  if (listen !== undefined) listenUrl(listen);
  const redis = redisFlags(values['redis-url'], values['redis-prefix'], env);
  const consoleToken = values.console === true ? consoleFlag(listen, env) : undefined;
  return {
    upstream,
    config,
    logLevel: logLevel as LogLevel | 'silent',
    logFormat,
    ...(listen === undefined ? {} : { listen }),
    ...(redis === undefined ? {} : { redis }),
    ...(consoleToken === undefined ? {} : { console: { token: consoleToken } }),
  };
}

// The console's token, from the environment only: a flag's value would sit in `ps` and shell
// history. Each message names the variable and what is wrong, never the value.
function consoleFlag(listen: string | undefined, env: Readonly<Record<string, string | undefined>>): string {
  if (listen === undefined) {
    throw new TypeError('--console needs --listen: the console is served at /console on that listener');
  }
  const token = env[consoleTokenVariable];
  if (token === undefined || token === '') {
    throw new TypeError(`--console needs a token in the ${consoleTokenVariable} environment variable`);
  }
  if (token.length < 16 || /\s/.test(token)) {
    throw new TypeError(
      `${consoleTokenVariable} must be at least 16 characters with no whitespace (value not shown)`,
    );
  }
  return token;
}

function parseFlags(own: string[]) {
  try {
    return parseArgs({ args: own, strict: true, allowPositionals: true, options: proxyFlags });
  } catch (error) {
    const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec((error as Error).message)?.[1];
    if (unknown === undefined) throw error;
    const near = nearest(unknown.replace(/^-+/, '').split('=')[0] as string, Object.keys(proxyFlags));
    throw new TypeError(
      `Unknown option '${unknown}'${near === undefined ? '' : `: did you mean --${near}?`}`,
    );
  }
}

/**
 * The known name closest to a mistyped one (case, `_` and camelCase aside), when one is close
 * enough to be what was meant; `undefined` when none is.
 *
 * @example
 * nearest('timeout', ['timeout-ms', 'listen']); // 'timeout-ms'
 */
export function nearest(typed: string, known: readonly string[]): string | undefined {
  const plain = (name: string) =>
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
      .replace(/_/g, '-')
      .toLowerCase();
  const wanted = plain(typed);
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const candidate = plain(name);
    // A prefix is what a user who forgot the unit (`--timeout`) typed.
    const distance =
      candidate.startsWith(wanted) && wanted.length >= 3 ? 0.5 : editDistance(wanted, candidate);
    if (
      distance <= Math.max(2, Math.ceil(candidate.length * 0.4)) &&
      (best === undefined || distance < best.distance)
    )
      best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions, one each. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] as number;
}

function redisFlags(
  flag: string | undefined,
  prefix: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): ProxyCommand['redis'] {
  // The twelve-factor spelling: a platform that provisions Redis sets REDIS_URL; the flag wins.
  const fromEnv = flag === undefined && env['REDIS_URL'] !== undefined && env['REDIS_URL'] !== '';
  const url = fromEnv ? env['REDIS_URL'] : flag;
  const name = fromEnv ? 'REDIS_URL' : '--redis-url';
  if (url === undefined) {
    if (prefix !== undefined) throw new TypeError(`--redis-prefix "${prefix}" needs --redis-url`);
    return undefined;
  }
  let protocol: string;
  let hostname: string;
  try {
    ({ protocol, hostname } = new URL(url));
  } catch {
    hostname = '';
    protocol = '';
  }
  // Every spelling is quoted masked: a typo may still hold the password.
  if (hostname === '' && (protocol === '' || protocol === 'redis:' || protocol === 'rediss:')) {
    throw new TypeError(`${name} must be a URL (redis://<host>:<port>), got "${maskedUrl(url)}"`);
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new TypeError(`${name} must be a redis: or rediss: URL, got "${maskedUrl(url)}"`);
  }
  if (prefix !== undefined && prefix.trim() === '') {
    throw new TypeError(`--redis-prefix must be a non-empty name, got "${prefix}"`);
  }
  return { url, prefix: prefix ?? 'td' };
}

// The upstream of a host-shaped `mcpServers` entry: the one there is, or the one --server names.
function serverEntry(
  servers: McpProxyConfig['mcpServers'],
  name: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): McpUpstream | undefined {
  const names = Object.keys(servers ?? {});
  if (servers === undefined || names.length === 0) {
    if (name !== undefined) throw new TypeError(`--server ${name} needs a --config with mcpServers`);
    return undefined;
  }
  if (name === undefined && names.length > 1) {
    throw new TypeError(
      `--config has ${names.length} mcpServers: pick one with --server (${names.join(', ')})`,
    );
  }
  const chosen = name ?? (names[0] as string);
  if (!Object.hasOwn(servers, chosen)) {
    const near = nearest(chosen, names);
    throw new TypeError(
      `--server ${chosen} is not in mcpServers${near === undefined ? ` (${names.join(', ')})` : `: did you mean ${near}?`}`,
    );
  }
  const entry = servers[chosen] as NonNullable<typeof servers>[string];
  const where = `mcpServers[${JSON.stringify(chosen)}]`;
  if ((entry.url === undefined) === (entry.command === undefined)) {
    throw new TypeError(`${where} needs either command or url`);
  }
  if (entry.url !== undefined) {
    const headers =
      entry.headers === undefined ? undefined : expandAll(entry.headers, env, `${where}.headers`);
    return { url: entry.url, ...(headers === undefined ? {} : { headers }) };
  }
  const own = entry.env === undefined ? undefined : expandAll(entry.env, env, `${where}.env`);
  return {
    command: entry.command as string,
    args: entry.args ?? [],
    ...(entry.cwd === undefined ? {} : { cwd: entry.cwd }),
    // As hosts do: the entry's variables over the environment the proxy was given.
    ...(own === undefined ? {} : { env: { ...definedOnly(env), ...own } }),
  };
}

function expandAll(
  values: Record<string, string>,
  env: Readonly<Record<string, string | undefined>>,
  where: string,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [key, expanded(value, env, `${where}.${key}`)]),
  );
}

// `${VAR}` replaced by its value; a message names the setting and the variable, never a value.
function expanded(value: string, env: Readonly<Record<string, string | undefined>>, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
    const set = env[variable];
    if (set === undefined) throw new TypeError(`${where} reads \${${variable}}, which is not set`);
    return set;
  });
}

function definedOnly(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) defined[key] = value;
  return defined;
}

// `Name: value` pairs with `${VAR}` read from the environment. A message names the header and
// the variable, never a value: the point of `${VAR}` is a token kept off the command line.
function headerFlags(
  flags: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> | undefined {
  if (flags.length === 0) return undefined;
  const headers: Record<string, string> = {};
  for (const flag of flags) {
    const colon = flag.indexOf(':');
    const name = colon === -1 ? '' : flag.slice(0, colon).trim();
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new TypeError(`--header must be "<Name>: <value>" with an HTTP header name (value not shown)`);
    }
    const value = expanded(flag.slice(colon + 1).trim(), env, `--header ${name}`);
    if (/[\r\n\0]/.test(value)) throw new TypeError(`--header ${name} must be one line (value not shown)`);
    headers[name] = value;
  }
  return headers;
}

/** Thrown by `parseProxyArgs` for `--help`. */
export class HelpRequested extends Error {}

/** Thrown by `parseProxyArgs` for `--version`. */
export class VersionRequested extends Error {}

function readConfig(path: string): McpProxyConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new TypeError(`Cannot read --config ${path}: ${(error as Error).message}`);
  }
  try {
    checkConfig(parsed);
  } catch (error) {
    throw new TypeError(`Invalid --config ${path}: ${(error as Error).message}`);
  }
  return parsed;
}

function numberFlag(name: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value))
    throw new TypeError(`--${name} must be a number, got "${text}"`);
  return value;
}

function positiveIntegerFlag(name: string, text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`--${name} must be a positive integer, got "${text}"`);
  }
  return value;
}
