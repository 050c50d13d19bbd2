// A canonical, key-sorted fingerprint of a call, so that "same args" means same content.
//
// The args are walked once and fed into two independent 32-bit hashes, never into a string:
// keyed calls pay no allocation for it, huge args cost one pass, and a cache entry keeps two
// small integers instead of a copy of its args.

/** Two 32-bit hashes of a tool name and its args; equal for equal content in any key order. */
export interface Fingerprint {
  readonly high: number;
  readonly low: number;
}

/** Whether two fingerprints are equal. */
export function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return a.high === b.high && a.low === b.low;
}

const numberView = new Float64Array(1);
const numberWords = new Uint32Array(numberView.buffer);

class Hasher {
  high = 0x9e3779b9;
  low = 0x85ebca6b;

  word(value: number): void {
    this.high = Math.imul(this.high ^ value, 0x85ebca77);
    this.low = Math.imul(this.low ^ value, 0xc2b2ae3d);
    this.high ^= this.high >>> 15;
    this.low ^= this.low >>> 13;
  }

  text(value: string): void {
    this.word(value.length);
    for (let i = 0; i < value.length; i++) this.word(value.charCodeAt(i));
  }

  number(value: number): void {
    numberView[0] = value;
    this.word(numberWords[0] as number);
    this.word(numberWords[1] as number);
  }

  finish(): Fingerprint {
    let { high, low } = this;
    high = Math.imul(high ^ (high >>> 16), 0x7feb352d) ^ Math.imul(low, 0x846ca68b);
    low = Math.imul(low ^ (low >>> 16), 0x846ca68b) ^ Math.imul(high, 0x7feb352d);
    return { high: high | 0, low: low | 0 };
  }
}

// Distinct tags keep, say, the string "1" and the number 1 apart.
const enum Tag {
  Undefined = 1,
  Null,
  False,
  True,
  Number,
  String,
  BigInt,
  Array,
  Object,
  Date,
  Cycle,
  Other,
  Map,
  Set,
  Instance,
}

/**
 * A fingerprint that is equal for two calls exactly when their tool names are equal and their
 * args are equal as JSON-like data, whatever the key order (up to a 2^-64 chance of collision).
 * Copes with cycles and any size.
 */
export function fingerprint(toolName: string, args: unknown): Fingerprint {
  const hasher = new Hasher();
  hasher.text(toolName);
  feed(hasher, args, []);
  return hasher.finish();
}

function feed(hasher: Hasher, value: unknown, ancestors: object[]): void {
  switch (typeof value) {
    case 'string':
      hasher.word(Tag.String);
      hasher.text(value);
      return;
    case 'number':
      hasher.word(Tag.Number);
      hasher.number(value);
      return;
    case 'boolean':
      hasher.word(value ? Tag.True : Tag.False);
      return;
    case 'bigint':
      hasher.word(Tag.BigInt);
      hasher.text(value.toString());
      return;
    case 'undefined':
      hasher.word(Tag.Undefined);
      return;
    case 'object':
      break;
    default:
      hasher.word(Tag.Other);
      hasher.text(typeof value);
      return;
  }
  if (value === null) return hasher.word(Tag.Null);
  if (ancestors.includes(value)) return hasher.word(Tag.Cycle);
  if (value instanceof Date) {
    hasher.word(Tag.Date);
    hasher.number(value.getTime());
    return;
  }
  ancestors.push(value);
  if (Array.isArray(value)) {
    hasher.word(Tag.Array);
    hasher.word(value.length);
    for (const item of value) feed(hasher, item, ancestors);
  } else if (value instanceof Map) {
    hasher.word(Tag.Map);
    hasher.word(value.size);
    for (const [key, item] of value) {
      feed(hasher, key, ancestors);
      feed(hasher, item, ancestors);
    }
  } else if (value instanceof Set) {
    hasher.word(Tag.Set);
    hasher.word(value.size);
    for (const item of value) feed(hasher, item, ancestors);
  } else {
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      // A class instance (a URL, a Buffer…) often keeps its content out of its own keys: its
      // constructor and its string or JSON form tell two of them apart.
      hasher.word(Tag.Instance);
      hasher.text(String((value as { constructor?: { name?: unknown } }).constructor?.name));
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') feed(hasher, toJSON.call(value), ancestors);
      else hasher.text(String(value));
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    hasher.word(Tag.Object);
    hasher.word(keys.length);
    for (const key of keys) {
      hasher.text(key);
      feed(hasher, record[key], ancestors);
    }
  }
  ancestors.pop();
}
