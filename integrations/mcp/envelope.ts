// The `_meta` keys this integration reads and writes, and the envelope it puts on the wire.

import type { DispatchError, DispatchErrorJson } from '../../index.js';

/** The `_meta` key of a `tools/call` request that carries the caller's idempotency key. */
export const idempotencyKeyMetaKey = 'tool-dispatcher/idempotencyKey';

/** The `_meta` key of a failed `CallToolResult` that carries the error envelope. */
export const errorMetaKey = 'tool-dispatcher/error';

// A line that looks like a stack frame ("    at fn (file.js:1:2)").
const stackFrame = /^\s*at\s.+/;

/** The envelope as plain JSON, its message without stack-frame lines. */
export function envelopeOf(error: DispatchError): DispatchErrorJson {
  const json = error.toJSON();
  return { ...json, message: withoutStackFrames(json.message) };
}

function withoutStackFrames(message: string): string {
  if (!message.includes('\n')) return stackFrame.test(message) ? '' : message;
  return message
    .split(/\r?\n/)
    .filter((line) => !stackFrame.test(line))
    .join('\n')
    .trim();
}
