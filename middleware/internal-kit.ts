/**
 * The internal kit: the helpers the built-in layers and host bridges share that are not public.
 * No package subpath exports this module; the architecture test lets an integration import it
 * (its one door into the package's internals) besides the public faces.
 * @module
 */

import { toJsonSafe } from '../src/json-safe.js';
import { createRedactor, type Redactor } from '../src/redact.js';
import type { StandardSchemaV1 } from '../src/standard-schema.js';

export { neverAborted, noop } from '../src/internal/abort.js';
export { isThenable } from '../src/internal/thenable.js';
export { windowTooSmall } from '../src/internal/failures.js';
export { isJsonParseError } from '../src/errors.js';
export { parseJsonArgs, refusedArgs } from '../src/internal/raw-json-args.js';
export { hostDenialOf } from '../src/internal/host-denial.js';
export { attemptCost } from '../src/internal/cost.js';
export {
  foundNotCommitted,
  outcomeUnknown,
  reconcileFindingOf,
  reconcileOutcome,
} from '../src/internal/reconcile.js';
export type { ReconcileFinding, Reconciled } from '../src/internal/reconcile.js';

/**
 * How an issue of a tool's schema reads in an envelope's message, for every check of args against
 * it (the schema layer's, the approval gate's of edited args): `path: message`
 * (`items[2].sku: Required`), or its message alone at the root.
 */
export function describeIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  if (path.length === 0) return issue.message;
  const where = path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
  return `${where}: ${issue.message}`;
}

/** The marker a capped args preview ends with. */
export const previewCut = '…[truncated]';

let builtins: Redactor | undefined;

/** The redactor with the built-in patterns alone, made once: for a call with no redactor of its own. */
export function builtinRedactor(): Redactor {
  builtins ??= createRedactor();
  return builtins;
}

/**
 * A call's args as a person may see them (an approval's reviewer, an in-doubt receipt's
 * operator): redacted as values (so a secret in a string is found whatever JSON would escape in
 * it), as JSON text, redacted again as text, and cut to `maxChars`. `undefined` when `maxChars`
 * is 0 (previews off).
 */
export function previewOf(args: unknown, redactor: Redactor, maxChars: number): string | undefined {
  if (maxChars === 0) return undefined;
  const text = redactor.redact(JSON.stringify(toJsonSafe(redactor.redactValue(args))) ?? 'null');
  if (text.length <= maxChars) return text;
  // Cut after redaction: a cut never splits a secret into pieces the patterns no longer match.
  return `${text.slice(0, Math.max(0, maxChars - previewCut.length))}${previewCut}`;
}
