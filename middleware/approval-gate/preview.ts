/**
 * What a reviewer sees of a call's args: their JSON text, redacted, then capped, made before it
 * reaches any approval store.
 * @module
 */

import { toJsonSafe } from '../../src/json-safe.js';
import type { Redactor } from '../../src/redact.js';

/** The marker a capped preview ends with. */
export const previewCut = '…[truncated]';

/**
 * The args as a reviewer may see them: redacted as values (so a secret in a string is found
 * whatever JSON would escape in it), as JSON text, redacted again as text, and cut to `maxChars`.
 * `undefined` when `maxChars` is 0 (previews off).
 */
export function previewOf(args: unknown, redactor: Redactor, maxChars: number): string | undefined {
  if (maxChars === 0) return undefined;
  const text = redactor.redact(JSON.stringify(toJsonSafe(redactor.redactValue(args))) ?? 'null');
  if (text.length <= maxChars) return text;
  // Cut after redaction: a cut never splits a secret into pieces the patterns no longer match.
  return `${text.slice(0, Math.max(0, maxChars - previewCut.length))}${previewCut}`;
}
