/**
 * Reading a backend's "slow down": `Retry-After`-style headers and the 429/503/529 shapes of a
 * fetch `Response`, an SDK's API error, or an MCP tool's error result, turned into one
 * `TransientError` that says how long to wait.
 * @module
 */

import { TransientError } from './errors.js';

/** Headers as a fetch `Headers` (anything with `get`) or a plain object, names in any case. */
export type HeadersLike =
  | {
      /** The header's value, as a fetch `Headers` answers. */
      get(name: string): string | null | undefined;
    }
  | Readonly<Record<string, string | readonly string[] | number | null | undefined>>;

/** Options for `parseRetryAfter` and `classifyRateLimit`. */
export interface RetryAfterOptions {
  /**
   * The clock an HTTP date or an epoch reset is read against, in ms since the epoch.
   * @default Date.now
   */
  now?: () => number;
}

const rateLimitStatuses = new Set([429, 503, 529]);
const rateLimitText = /rate[ _-]?limit|too many requests|quota/i;
const retryAfterText =
  /retry[ _-]?after[^0-9]{0,12}(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec(?:ond)?s?|m|min(?:ute)?s?)?/i;
// Epoch seconds (a reset time) are this large; smaller values are a delta in seconds.
const epochSecondsFloor = 1e9;

function headerOf(headers: HeadersLike, name: string): string | undefined {
  const getter = (headers as { get?: unknown }).get;
  if (typeof getter === 'function') {
    const value: unknown = getter.call(headers, name);
    return typeof value === 'string' ? value : undefined;
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') return first;
    if (typeof first === 'number') return String(first);
  }
  return undefined;
}

function numberIn(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return undefined;
  return Number(text);
}

/**
 * How long a response's headers ask the caller to wait, in milliseconds, or `undefined`. Reads
 * the first usable of `retry-after-ms`, `retry-after` (seconds or an HTTP date, on `now`) and
 * `x-ratelimit-reset` (epoch seconds above 10^9, else seconds from now); junk is skipped and a
 * time in the past is 0.
 *
 * @example
 * parseRetryAfter(response.headers); // 1000 for `Retry-After: 1`
 * parseRetryAfter({ 'x-ratelimit-reset': '1767225600' }, { now: () => clock.now() });
 */
export function parseRetryAfter(headers: HeadersLike, options: RetryAfterOptions = {}): number | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const now = options.now ?? Date.now;
  try {
    const ms = numberIn(headerOf(headers, 'retry-after-ms'));
    if (ms !== undefined) return Math.ceil(ms);
    const retryAfter = headerOf(headers, 'retry-after');
    const seconds = numberIn(retryAfter);
    if (seconds !== undefined) return Math.ceil(seconds * 1000);
    const date = retryAfter === undefined || !/[a-z]/i.test(retryAfter) ? Number.NaN : Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, Math.ceil(date - now()));
    const reset = numberIn(headerOf(headers, 'x-ratelimit-reset'));
    if (reset === undefined) return undefined;
    return reset > epochSecondsFloor ? Math.max(0, Math.ceil(reset * 1000 - now())) : Math.ceil(reset * 1000);
  } catch {
    // Headers whose reading throws say nothing usable.
    return undefined;
  }
}

/** The wait an error text names ("retry after 2 s", "Retry-After: 500ms"), in ms. */
function retryAfterInText(text: string): number | undefined {
  const match = retryAfterText.exec(text);
  if (match === null) return undefined;
  const value = Number(match[1]);
  const unit = (match[2] ?? 's').toLowerCase();
  if (unit.startsWith('ms') || unit.startsWith('milli')) return Math.ceil(value);
  if (unit.startsWith('m')) return Math.ceil(value * 60_000);
  return Math.ceil(value * 1000);
}

function textOfResult(result: { content?: unknown }): string {
  const { content } = result;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (part as { type?: unknown; text?: unknown } | null)?.text)
    .filter((text): text is string => typeof text === 'string')
    .join('\n');
}

function limitedError(message: string, retryAfterMs: number | undefined, cause: unknown): TransientError {
  return new TransientError(message, {
    rateLimited: true,
    cause,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/**
 * Turns a backend's rate-limit answer into `TransientError({ retryAfterMs, rateLimited: true })`,
 * or `undefined` for anything else: status 429, 503 or 529 on a fetch `Response` or on any error
 * with `status` and `headers` (the OpenAI and Anthropic SDKs' `APIError`), and an MCP tool result
 * with `isError` whose text says "rate limit", "too many requests" or "quota" (a "retry after N s"
 * in it is read). The attempt step applies it to every handler throw, `importMcpTools` to every
 * error result, so a handler that lets an SDK's 429 escape is retried after the wait it asked for.
 *
 * @example
 * const response = await fetch(url);
 * if (!response.ok) throw classifyRateLimit(response) ?? new Error(`HTTP ${response.status}`);
 */
export function classifyRateLimit(
  value: unknown,
  options: RetryAfterOptions = {},
): TransientError | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    // Inside the try: a hostile proxy throws even for `instanceof`.
    if (value instanceof TransientError) return value.rateLimited ? value : undefined;
    const { status, headers, isError } = value as { status?: unknown; headers?: unknown; isError?: unknown };
    if (typeof status === 'number') {
      if (!rateLimitStatuses.has(status)) return undefined;
      const retryAfterMs =
        typeof headers === 'object' && headers !== null
          ? parseRetryAfter(headers as HeadersLike, options)
          : undefined;
      const label = status === 429 ? 'rate limited' : status === 529 ? 'overloaded' : 'unavailable';
      return limitedError(`The backend answered ${status} (${label})`, retryAfterMs, value);
    }
    if (isError !== true) return undefined;
    const text = textOfResult(value as { content?: unknown });
    if (!rateLimitText.test(text)) return undefined;
    return limitedError(text.slice(0, 500), retryAfterInText(text), value);
  } catch {
    return undefined;
  }
}
