/**
 * How long one attempt of a tool may run, read the one way the timeout layer reads it.
 * @module
 */

import type { ToolTimeout } from '../types.js';

/** The fields of a tool (or of its listing) that say how long its attempts may run. */
export interface TimedTool {
  readonly timeoutMs?: number | undefined;
  readonly timeout?: Pick<ToolTimeout, 'totalMs'> | undefined;
}

/**
 * The longest an attempt may run: for a tool with an idle timeout, its `totalMs` capped by the
 * call's `timeoutMs`; otherwise the call's `timeoutMs`, else the tool's, else `fallback` (the
 * timeout layer's `defaultMs`, or `Infinity` for a reader that has no default).
 */
export function attemptTimeoutMs(
  callTimeoutMs: number | undefined,
  tool: TimedTool | undefined,
  fallback: number,
): number {
  const idle = tool?.timeout;
  if (idle !== undefined) return Math.min(idle.totalMs, callTimeoutMs ?? Infinity);
  return callTimeoutMs ?? tool?.timeoutMs ?? fallback;
}
