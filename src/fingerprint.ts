/**
 * The fingerprint of a call: a SHA-256 digest of its tool name and a canonical form of its args,
 * so that "same args" means JSON-equal content and different args never share a digest.
 *
 * The canonical form follows JSON equality: keys in sorted order, `-0` as `0`, a property whose
 * value is `undefined` as if it were absent (but `undefined` in an array stays apart from
 * `null`: a hole is not a value the caller sent). Maps and Sets
 * compare by content in any insertion order. Binary data (Buffers, typed arrays, ArrayBuffers)
 * is digested as bytes, never spelled out one byte at a time.
 * @module
 */

import { hash } from 'node:crypto';

/**
 * A call's fingerprint: equal strings for equal content. The SHA-256 digest as a 32-character
 * Latin-1 string: collision-resistant, and small enough that a million cached keys stay under
 * 200 bytes each. Opaque: compare it, never show it.
 */
export type Fingerprint = string;

/**
 * The fingerprint of `toolName` called with `args`: equal for two calls exactly when their tool
 * names are equal and their args are equal as JSON-like data, whatever the key order. Copes with
 * cycles and any size. `encoding` spells the same digest as base64url, for text that is sent on.
 */
export function fingerprint(
  toolName: string,
  args: unknown,
  encoding: 'binary' | 'base64url' = 'binary',
): Fingerprint {
  // 'binary' (Latin-1): the digest's 32 bytes as a 32-character string; only equality is asked of it.
  return hash('sha256', canonicalText(toolName, args), encoding);
}

/**
 * The text `fingerprint` digests: `toolName` as JSON, a NUL, then the canonical form of `args`.
 * Exported for the benchmarks, which time the walk apart from the hash.
 */
export function canonicalText(toolName: string, args: unknown): string {
  return `${JSON.stringify(toolName)}\u0000${canonical(args, [])}`;
}

// Distinct prefixes keep, say, the string "1", the number 1 and the bigint 1n apart.
function canonical(value: unknown, ancestors: object[]): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // String(-0) is "0", as in JSON; NaN and the infinities stay apart from null and each other.
      return Number.isFinite(value) ? String(value) : `#${String(value)}`;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return `${value.toString()}n`;
    case 'undefined':
      return 'undefined';
    case 'object':
      if (value === null) return 'null';
      break;
    default:
      return `<${typeof value}>`;
  }
  if (ancestors.includes(value)) return '<cycle>';
  ancestors.push(value);
  try {
    return canonicalObject(value, ancestors);
  } finally {
    ancestors.pop();
  }
}

function canonicalObject(value: object, ancestors: object[]): string {
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      text += (i === 0 ? '' : ',') + canonical(item, ancestors);
    }
    return `${text}]`;
  }
  if (ArrayBuffer.isView(value)) {
    return binary(value.constructor.name, new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
  }
  if (value instanceof ArrayBuffer || value instanceof SharedArrayBuffer) {
    return binary(value.constructor.name, new Uint8Array(value));
  }
  if (value instanceof Date) return `Date(${value.getTime()})`;
  if (value instanceof Map) {
    const entries = Array.from(
      value,
      ([key, item]) => `${canonical(key, ancestors)}=>${canonical(item, ancestors)}`,
    );
    return `Map{${entries.sort().join(',')}}`;
  }
  if (value instanceof Set) {
    const members = Array.from(value, (item) => canonical(item, ancestors));
    return `Set{${members.sort().join(',')}}`;
  }
  let text = '';
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    // A class instance (a URL, say) often keeps its content out of its own keys: its
    // constructor and its JSON or string form tell two of them apart.
    const name = String((value as { constructor?: { name?: unknown } }).constructor?.name);
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    const form =
      typeof toJSON === 'function' ? canonical(toJSON.call(value), ancestors) : JSON.stringify(String(value));
    text = `${name}(${form})`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let body = '{';
  let first = true;
  for (const key of keys) {
    const item = record[key];
    // Absent and undefined are the same call, as they are once sent as JSON.
    if (item === undefined) continue;
    body += `${first ? '' : ','}${JSON.stringify(key)}:${canonical(item, ancestors)}`;
    first = false;
  }
  return `${text}${body}}`;
}

function binary(kind: string, bytes: Uint8Array): string {
  return `${kind}(${bytes.byteLength}:${hash('sha256', bytes, 'base64url')})`;
}
