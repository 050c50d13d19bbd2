/**
 * What the OpenTelemetry layers write for a failure's message: never an idempotency key, and no
 * text that may quote the arguments unless recording arguments is on.
 * @module
 */

import { isJsonParseError } from '../../middleware/internal-kit.js';

/** The parts of a failure its telemetry message is chosen from. */
export interface Failure {
  /** The envelope's kind. */
  readonly kind: string;
  /** The envelope's message, as the model gets it. */
  readonly message: string;
  /** The envelope's cause, when known: a JSON parser's `SyntaxError` marks an excerpt. */
  readonly cause?: unknown;
}

// Kinds whose messages are built around the call's idempotency key (the idempotency layer's,
// and its stores' leases): the key is in the message by design, so a fixed text stands in.
const keyMessages: Readonly<Record<string, string>> = {
  idempotency_conflict: 'The idempotency key was already used for a different tool or different args',
  idempotency_result_unavailable:
    'The idempotency key already succeeded, but its result could not be shared; it is not run again',
  lease_lost: 'A lease was lost to another holder',
};

// A JSON parser's message quotes the text it failed on, which may be the arguments.
const parserMessage =
  "The JSON could not be parsed (the parser's message quotes its input and is recorded only with " +
  'recordArguments)';

// A schema message may quote the arguments: a JSON parser's excerpt, a validator's received value.
const schemaMessage =
  'The arguments were rejected (the details may quote them and are recorded only with recordArguments)';

/**
 * The message telemetry records for `failure`: the envelope's own, unless it is built around the
 * idempotency key or contains `key` (then always withheld), or may quote the arguments (a
 * `schema` failure, or a JSON parser's error as its cause) and `recordArguments` is off. A
 * withheld message becomes a fixed text that names what was withheld.
 */
export function safeMessage(failure: Failure, key: string | undefined, recordArguments: boolean): string {
  const { kind, message } = failure;
  const fixed = Object.hasOwn(keyMessages, kind) ? keyMessages[kind] : undefined;
  if (fixed !== undefined) return fixed;
  if (typeof key === 'string' && key !== '' && containsKey(message, key)) {
    return `The ${kind} message quotes the idempotency key and is not recorded`;
  }
  if (recordArguments) return message;
  if (isParserError(failure.cause)) return parserMessage;
  return kind === 'schema' ? schemaMessage : message;
}

// Messages that quote a long key shorten it to its first 61 characters (the idempotency layer's
// rule); any of those is the key as far as telemetry is concerned.
function containsKey(message: string, key: string): boolean {
  return message.includes(key.length > 64 ? key.slice(0, 61) : key);
}

function isParserError(cause: unknown): boolean {
  try {
    return isJsonParseError(cause);
  } catch {
    // A cause that cannot be read may be anything: treated as the parser's, so withheld.
    return true;
  }
}
