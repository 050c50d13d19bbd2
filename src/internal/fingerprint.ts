// A canonical, key-sorted fingerprint of a call, so that "same args" means same content.

import { createHash } from 'node:crypto';

// Longer canonical forms are hashed, so an idempotency entry stays small whatever the args.
const maxInlineLength = 96;

/**
 * A string that is equal for two calls exactly when their tool names are equal and their args
 * are equal as JSON-like data, whatever the key order. Copes with cycles and any size.
 */
export function fingerprint(toolName: string, args: unknown): string {
  const text = `${toolName}\u0000${canonicalize(args, [])}`;
  if (text.length <= maxInlineLength) return text;
  return `#${createHash('sha256').update(text).digest('base64url')}`;
}

function canonicalize(value: unknown, ancestors: object[]): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'undefined':
      return 'undefined';
    case 'object':
      break;
    default:
      return `<${typeof value}>`;
  }
  if (value === null) return 'null';
  if (ancestors.includes(value)) return '<cycle>';
  if (value instanceof Date) return `<date ${value.getTime()}>`;
  ancestors.push(value);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map((item) => canonicalize(item, ancestors)).join(',')}]`;
  } else {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    text = `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalize(record[key], ancestors)}`).join(',')}}`;
  }
  ancestors.pop();
  return text;
}
