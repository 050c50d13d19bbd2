/**
 * Output guard: a success too long for a model gets a model copy (head, tail, a notice), and the
 * whole result can be spilled behind a handle.
 * @module
 */

import { toJsonSafe } from '../../src/json-safe.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DispatchContext, Middleware, ModelCopy, Next } from '../../src/types.js';
import { optionKeys, optionsObject } from '../kit.js';
import type { SpillStore } from './spill-store.js';

/** Options for `outputGuard`. */
export interface OutputGuardOptions {
  /**
   * The longest model copy, in characters (at least 200); a longer result is cut to its head
   * (two thirds) and tail (one third) with a notice between them.
   * @default 8_000
   */
  maxChars?: number;
  /** Where the whole (redacted) result of a cut call is kept; its handle is in the notice. */
  spill?: SpillStore;
}

const outputGuardOptionKeys = optionKeys<OutputGuardOptions>({ maxChars: true, spill: true });

/** The output guard: a layer, and the longest model copy it makes. */
export interface OutputGuardLayer extends Middleware {
  /** The longest model copy, in characters. */
  readonly maxChars: number;
}

/** @deprecated Use `OutputGuardLayer`. */
export type OutputGuardMiddleware = OutputGuardLayer;

/**
 * Gives a success whose rendering (a string as it is, anything else as JSON) is longer than
 * `maxChars` a model copy: `outcome.modelCopy = { text, truncated, originalChars, handle? }`,
 * the text at most `maxChars`: its head (two thirds), a notice with the original length, a hint
 * to narrow the query and the spill handle, and its tail (one third). `outcome.result` stays
 * whole. The result is redacted (with the dispatcher's `redact`) before it is cut or spilled; a
 * spill store that fails loses only the handle. `toToolMessage` and the host integrations show
 * the model copy as it is. Place it outermost after `errorMapping`.
 *
 * @throws TypeError for a `maxChars` under 200 or a `spill` without `put`.
 * @example
 * const spill = memorySpillStore();
 * createDispatcher(defaultStack({ registry, output: outputGuard({ maxChars: 8_000, spill }) }));
 */
export function outputGuard(options?: OutputGuardOptions): OutputGuardLayer {
  const { maxChars = 8_000, spill } = optionsObject('outputGuard', options, outputGuardOptionKeys);
  if (
    typeof maxChars !== 'number' ||
    !(maxChars >= 200) ||
    (maxChars !== Infinity && !Number.isInteger(maxChars))
  ) {
    throw new TypeError(`maxChars must be an integer >= 200 (or Infinity), got ${String(maxChars)}`);
  }
  if (
    spill !== undefined &&
    (typeof spill !== 'object' || spill === null || typeof spill.put !== 'function')
  ) {
    throw new TypeError(
      'spill must be a spill store with put(value) and get(handle), such as memorySpillStore()',
    );
  }
  const layer = trusted(async function outputGuard(ctx: DispatchContext, next: Next): Promise<void> {
    await next();
    const { outcome } = ctx;
    if (outcome?.ok !== true || outcome.modelCopy !== undefined) return;
    // A number, boolean, null or nothing renders shorter than the least maxChars.
    const given = outcome.result;
    if (typeof given !== 'string' && (typeof given !== 'object' || given === null)) return;
    const whole = render(given);
    if (whole.length <= maxChars) return;
    const result = ctx.redactor === undefined ? outcome.result : ctx.redactor.redactValue(outcome.result);
    const text = ctx.redactor === undefined ? whole : render(result);
    const handle = spill === undefined ? undefined : await spilled(spill, result);
    ctx.outcome = { ...outcome, result, modelCopy: cutCopy(endsOf(result, text), maxChars, handle) };
  });
  return Object.assign(layer, { maxChars });
}

// The handle a spill store gave the whole result; a store that fails loses only the handle.
async function spilled(spill: SpillStore, result: unknown): Promise<string | undefined> {
  try {
    return handleOf(await spill.put(result));
  } catch {
    return undefined;
  }
}

function handleOf(handle: unknown): string | undefined {
  return typeof handle === 'string' && handle.length > 0 ? handle : undefined;
}

// The text a model would be shown of `result`: a string as it is, anything else as JSON.
function render(result: unknown): string {
  if (typeof result === 'string') return result;
  try {
    return JSON.stringify(result) ?? '';
  } catch {
    return JSON.stringify(toJsonSafe(result)) ?? '';
  }
}

/** A rendering's length, and its first or last characters. */
export interface TextEnds {
  /** The rendering's length. */
  readonly length: number;
  /** At least its first `chars` characters (or all of it), from its start. */
  head(chars: number): string;
  /** At least its last `chars` characters (or all of it), up to its end. */
  tail(chars: number): string;
}

/**
 * `text` (or a rendering known by its ends) cut to at most `maxChars`: the head (two thirds of the
 * room left by the notice), the notice (its hint and the spill handle always whole), and the
 * tail (the other third).
 */
export function cutCopy(text: string | TextEnds, maxChars: number, handle: string | undefined): ModelCopy {
  const ends = typeof text === 'string' ? wholeText(text) : text;
  const originalChars = ends.length;
  const notice = noticeFor(originalChars, maxChars, handle);
  const room = Math.max(0, maxChars - notice.length);
  const headChars = Math.floor((room * 2) / 3);
  const tailChars = room - headChars;
  // One character more at each end, to see whether the cut splits a surrogate pair.
  const headText = ends.head(headChars + 1);
  const head = sliceWhole(headText, 0, Math.min(headChars, headText.length));
  const tailText = ends.tail(tailChars + 1);
  const tail = sliceWhole(tailText, Math.max(0, tailText.length - tailChars), tailText.length);
  const copy: { text: string; truncated: boolean; originalChars: number; handle?: string } = {
    // Joined into a flat string, so the copy holds none of the whole text it was cut from.
    text: [head, notice, tail].join(''),
    truncated: true,
    originalChars,
  };
  if (handle !== undefined) copy.handle = handle;
  return copy;
}

/**
 * The notice between the head and the tail. It always names the hint and the spill handle, the
 * model's only way to ask for the rest: the head and tail shrink first, then the notice is the
 * short one. A handle is never cut, so one too long for even that makes the copy longer than
 * `maxChars`.
 */
function noticeFor(originalChars: number, maxChars: number, handle: string | undefined): string {
  const where = handle === undefined ? '' : ` The whole result is kept as ${handle}.`;
  const full = `\n[… cut: the result has ${originalChars} characters; this shows its start and end. Narrow the query (filter, fewer fields, a page) to see less at a time.${where}]\n`;
  if (full.length <= maxChars) return full;
  const kept = handle === undefined ? '' : ` Whole result: ${handle}`;
  return `\n[… cut from ${originalChars} characters; narrow the query.${kept}]\n`;
}

// Never leaves half of a surrogate pair at either end of the slice.
function sliceWhole(text: string, start: number, end: number): string {
  let from = start;
  let to = end;
  if (from > 0 && isLowSurrogate(text.charCodeAt(from))) from += 1;
  if (to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to -= 1;
  return from >= to ? '' : text.slice(from, to);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function wholeText(text: string): TextEnds {
  return {
    length: text.length,
    head: () => text,
    tail: () => text,
  };
}

// The ends of a long array's JSON, read from the JSON of its first and last few items: reading
// characters of the whole rendering would copy all of it first. Items whose own `toJSON` might
// depend on their index are rendered whole, as is anything but an array.
function endsOf(result: unknown, text: string): TextEnds {
  if (
    typeof result === 'string' ||
    !Array.isArray(result) ||
    result.length < 2 ||
    typeof (result as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return wholeText(text);
  }
  const items: readonly unknown[] = result;
  const whole = wholeText(text);
  const plain = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const item = items[i];
      if (
        typeof item === 'object' &&
        item !== null &&
        !(item instanceof Date) &&
        typeof (item as { toJSON?: unknown }).toJSON === 'function'
      ) {
        return false;
      }
    }
    return true;
  };
  const part = (chars: number, fromEnd: boolean): string | undefined => {
    for (let count = 1; count < items.length; count *= 2) {
      const from = fromEnd ? items.length - count : 0;
      if (!plain(from, from + count)) return undefined;
      let json: string | undefined;
      try {
        json = JSON.stringify(items.slice(from, from + count));
      } catch {
        return undefined;
      }
      if (json === undefined) return undefined;
      // `[a,b` is how the whole starts; `c,d]` is how it ends.
      const piece = fromEnd ? json.slice(1) : json.slice(0, -1);
      if (piece.length >= chars) return piece;
    }
    return undefined;
  };
  return {
    length: text.length,
    head: (chars) => part(chars, false) ?? whole.head(chars),
    tail: (chars) => part(chars, true) ?? whole.tail(chars),
  };
}
