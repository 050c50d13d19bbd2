/**
 * Reading a backend's "slow down": `Retry-After`-style headers and the 429/503/529 shapes of a
 * fetch `Response`, an SDK's API error, or an MCP tool's error result, turned into one
 * `TransientError` that says how long to wait.
 * @module
 */

import { TransientError } from './errors.js';
import { maxTimerDelayMs } from './internal/abort.js';

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
// Where an error text names its wait: "retry after …", "Retry-After: …", "retry in …", "try again in …".
const retryPhrase = /\b(?:retry[ _-]?after|retry[ _-]in|try[ _-]again[ _-](?:in|after))\b\s*[:=]?\s*/gi;
// Epoch seconds (a reset time) are this large; smaller values are a delta in seconds.
const epochSecondsFloor = 1e9;

/**
 * The longest wait any signal is read as, in ms: 2^31 − 1 (about 24.8 days), the longest a timer
 * can wait. A longer `Retry-After` (a date years away, a number past `Number.MAX_VALUE`) is capped
 * to it, so every wait is a finite number.
 */
const maxRetryAfterMs = maxTimerDelayMs;

function capped(ms: number): number {
  return Math.min(Math.max(0, Math.ceil(ms)), maxRetryAfterMs);
}

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

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const month = `(${months.join('|')})`;
const clockTime = '(\\d{2}):(\\d{2}):(\\d{2})';
// RFC 9110 §5.6.7, case-sensitive as it says: IMF-fixdate, RFC 850 and asctime.
const imfFixdate = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${month} (\\d{4}) ${clockTime} GMT`,
);
const rfc850Date = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${month}-(\\d{2}) ${clockTime} GMT`,
);
const asctimeDate = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${month} ( \\d|\\d{2}) ${clockTime} (\\d{4})`,
);

/** The time in ms since the epoch of a UTC date and time, or NaN when a field is out of range. */
function utc(
  year: number,
  monthIndex: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number {
  if (hour > 23 || minute > 59 || second > 60) return Number.NaN;
  // A leap second is read as the last second of its minute.
  const at = Date.UTC(year, monthIndex, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls 31 Feb over into March; such a date is no date.
  return new Date(at).getUTCDate() === day ? at : Number.NaN;
}

/**
 * An HTTP date (RFC 9110 §5.6.7) at the start of `text`, in ms since the epoch, and its length;
 * `undefined` for anything else. An RFC 850 two-digit year more than 50 years ahead of `now` is
 * the most recent past year with those digits, as §5.6.7 says.
 */
function httpDateAt(text: string, now: number): { at: number; length: number } | undefined {
  let match = imfFixdate.exec(text);
  if (match !== null) {
    const [, day, mon, year, h, m, s] = match as unknown as string[];
    return dated(
      utc(Number(year), months.indexOf(mon!), Number(day), Number(h), Number(m), Number(s)),
      match,
    );
  }
  match = rfc850Date.exec(text);
  if (match !== null) {
    const [, day, mon, yy, h, m, s] = match as unknown as string[];
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(yy);
    if (year > thisYear + 50) year -= 100;
    return dated(utc(year, months.indexOf(mon!), Number(day), Number(h), Number(m), Number(s)), match);
  }
  match = asctimeDate.exec(text);
  if (match !== null) {
    const [, mon, day, h, m, s, year] = match as unknown as string[];
    return dated(
      utc(Number(year), months.indexOf(mon!), Number(day), Number(h), Number(m), Number(s)),
      match,
    );
  }
  return undefined;
}

function dated(at: number, match: RegExpExecArray): { at: number; length: number } | undefined {
  return Number.isNaN(at) ? undefined : { at, length: match[0].length };
}

/** The time of a header value that is exactly an HTTP date, or NaN. */
function httpDate(value: string, now: number): number {
  const trimmed = value.trim();
  const date = httpDateAt(trimmed, now);
  return date !== undefined && date.length === trimmed.length ? date.at : Number.NaN;
}

/**
 * How long a response's headers ask the caller to wait, in milliseconds, or `undefined`. Reads
 * the first usable of `retry-after-ms`, `retry-after` (seconds, or an HTTP date of RFC 9110
 * §5.6.7 on `now`) and `x-ratelimit-reset` (epoch seconds above 10^9, else seconds from now);
 * anything else (`retry in 5`, a date in another format) is skipped, a time in the past is 0,
 * and a wait is at most 2^31 − 1 ms (about 24.8 days; a longer one is capped).
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
    if (ms !== undefined) return capped(ms);
    const retryAfter = headerOf(headers, 'retry-after');
    const seconds = numberIn(retryAfter);
    if (seconds !== undefined) return capped(seconds * 1000);
    if (retryAfter !== undefined) {
      const at = now();
      const date = httpDate(retryAfter, at);
      if (!Number.isNaN(date)) return capped(date - at);
    }
    const reset = numberIn(headerOf(headers, 'x-ratelimit-reset'));
    if (reset === undefined) return undefined;
    return reset > epochSecondsFloor ? capped(reset * 1000 - now()) : capped(reset * 1000);
  } catch {
    // Headers whose reading throws say nothing usable.
    return undefined;
  }
}

const msPerUnit: ReadonlyArray<readonly [RegExp, number]> = [
  [/^(?:ms|millis(?:econds?)?|milliseconds?)$/i, 1],
  [/^(?:s|secs?|seconds?)$/i, 1_000],
  [/^(?:m|mins?|minutes?)$/i, 60_000],
  [/^(?:h|hrs?|hours?)$/i, 3_600_000],
  [/^(?:d|days?)$/i, 86_400_000],
  [/^(?:w|wks?|weeks?)$/i, 604_800_000],
];
// A number and the word after it ("2 hours", "500ms", "1.5 s"); a bare number is seconds.
const amountText = /^(\d+(?:\.\d+)?)(?!\d|[.:/-]\d)(?:\s*([a-z]+))?/i;
// An ISO 8601 date, with a time and an offset or not: "2026-12-01", "2026-12-01T12:34:56.5+02:00".
const isoText =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?(?![\d:.])/i;

/** The wait named right after a "retry after" phrase, in ms, or undefined. */
function waitAt(text: string, now: () => number): number | undefined {
  const at = now();
  const date = httpDateAt(text, at);
  if (date !== undefined) return capped(date.at - at);
  const iso = isoText.exec(text);
  if (iso !== null) {
    const time = isoTime(iso);
    return Number.isNaN(time) ? undefined : capped(time - at);
  }
  const amount = amountText.exec(text);
  if (amount === null) return undefined;
  const unit = amount[2];
  const perUnit = unit === undefined ? 1_000 : msPerUnit.find(([name]) => name.test(unit))?.[1];
  // "2 months", "5 tries": a word that is no unit we know gives no wait rather than a wrong one.
  return perUnit === undefined ? undefined : capped(Number(amount[1]) * perUnit);
}

// An ISO date's time; one without an offset is read as UTC, as an HTTP date always is.
function isoTime(match: RegExpExecArray): number {
  const [, year, mon, day, h = '0', m = '0', s = '0', fraction = '0', zone = 'Z'] =
    match as unknown as string[];
  const at = utc(Number(year), Number(mon) - 1, Number(day), Number(h), Number(m), Number(s));
  if (Number.isNaN(at) || Number(mon) < 1 || Number(mon) > 12) return Number.NaN;
  const ms = Number(`0.${fraction}`) * 1000;
  if (zone.toUpperCase() === 'Z') return at + ms;
  const offset = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone);
  if (offset === null) return Number.NaN;
  const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? '0');
  return at + ms - (offset[1] === '-' ? -1 : 1) * minutes * 60_000;
}

/**
 * The wait an error text names, in ms: "retry after 2 s", "Retry-After: 500ms", "try again in
 * 2 hours", "retry after 2026-12-01T12:00:00Z", "Retry-After: Tue, 01 Dec 2026 12:00:03 GMT".
 */
function retryAfterInText(text: string, now: () => number): number | undefined {
  for (const phrase of text.matchAll(retryPhrase)) {
    const from = phrase.index + phrase[0].length;
    // A wait is a few words long: the slice stays short however long the text is.
    const wait = waitAt(text.slice(from, from + 64), now);
    if (wait !== undefined) return wait;
  }
  return undefined;
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
 * with `isError` whose text says "rate limit", "too many requests" or "quota" (the wait after a
 * "retry after" or "try again in" is read: "2 hours", "500ms", an ISO or HTTP date; a word that is
 * no unit gives none). The attempt step applies it to every handler throw, `importMcpTools` to every
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
    return limitedError(text.slice(0, 500), retryAfterInText(text, options.now ?? Date.now), value);
  } catch {
    return undefined;
  }
}
