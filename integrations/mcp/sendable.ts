/**
 * Whether a result can go out on an MCP transport at all: every transport writes a message with
 * `JSON.stringify`, which overflows V8's stack a few thousand levels down and throws on a cycle or
 * a BigInt. A response that throws there is never sent, and its client waits for ever.
 * @module
 */

/**
 * The deepest nesting of objects and arrays a result may have to be sent: far below where
 * `JSON.stringify` overflows (about 4 000 levels on Node 20), so the check never depends on how
 * deep the stack is when the transport writes.
 */
export const maxResultDepth = 1000;

/**
 * Says why a transport cannot write `value` as JSON (nested more than `maxResultDepth` levels,
 * circular, holding a BigInt, or throwing when read), or `undefined` when it can. Walks the value
 * as `JSON.stringify` would (own enumerable keys, `toJSON` honoured), without building the text.
 *
 * @example
 * const problem = unsendable(result);
 * if (problem !== undefined) throw new Error(`The result cannot be sent: ${problem}`);
 */
export function unsendable(value: unknown): string | undefined {
  try {
    return problemIn(value, 0, new Set());
  } catch (error) {
    return `reading it failed (${error instanceof Error ? error.message : String(error)})`;
  }
}

function problemIn(value: unknown, depth: number, ancestors: Set<object>): string | undefined {
  let item = value;
  if (
    typeof item === 'object' &&
    item !== null &&
    typeof (item as { toJSON?: unknown }).toJSON === 'function'
  ) {
    item = (item as { toJSON: () => unknown }).toJSON();
  }
  if (typeof item === 'bigint') return 'it holds a BigInt, which JSON has no form for';
  if (typeof item !== 'object' || item === null) return undefined;
  if (depth >= maxResultDepth) return `it is nested more than ${maxResultDepth} levels deep`;
  if (ancestors.has(item)) return 'it is circular';
  ancestors.add(item);
  for (const child of Array.isArray(item) ? item : Object.values(item)) {
    const problem = problemIn(child, depth + 1, ancestors);
    if (problem !== undefined) return problem;
  }
  ancestors.delete(item);
  return undefined;
}
