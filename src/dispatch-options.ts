/**
 * Checks a dispatch's own options; a bad one fails that call with `schema`, before any layer runs.
 * @module
 */

import { isBudget } from './budget.js';

/** The longest idempotency key accepted; keys are held in memory for the TTL. */
export const maxIdempotencyKeyLength = 1_024;

/** What is wrong with `options`, or `undefined` when nothing is. */
export function dispatchOptionsProblem(options: unknown): string | undefined {
  if (typeof options !== 'object' || options === null) {
    return `options must be an object, got ${options === null ? 'null' : typeof options}`;
  }
  const {
    timeoutMs,
    idempotencyKey,
    idempotencyTtlMs,
    budget,
    signal,
    callId,
    displayName,
    onProgress,
    tenant,
    approval,
  } = options as Record<string, unknown>;
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs > 0))) {
    return `timeoutMs must be a number > 0 (or Infinity), got ${String(timeoutMs)}`;
  }
  if (idempotencyKey !== undefined) {
    if (!nonEmpty(idempotencyKey)) return 'idempotencyKey must be a non-empty string';
    if (idempotencyKey.length > maxIdempotencyKeyLength) {
      return `idempotencyKey must be at most ${maxIdempotencyKeyLength} characters, got ${idempotencyKey.length}`;
    }
  }
  if (budget !== undefined && !(typeof budget === 'number' && !Number.isNaN(budget)) && !isBudget(budget)) {
    return 'budget must be a number or a budget from createBudget()';
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) return 'signal must be an AbortSignal';
  if (callId !== undefined && !nonEmpty(callId)) return 'callId must be a non-empty string';
  if (displayName !== undefined && !nonEmpty(displayName)) return 'displayName must be a non-empty string';
  if (onProgress !== undefined && typeof onProgress !== 'function') return 'onProgress must be a function';
  if (tenant !== undefined && !nonEmpty(tenant)) return 'tenant must be a non-empty string';
  if (idempotencyTtlMs !== undefined && (typeof idempotencyTtlMs !== 'number' || !(idempotencyTtlMs > 0))) {
    return `idempotencyTtlMs must be a number > 0 (or Infinity), got ${String(idempotencyTtlMs)}`;
  }
  if (approval !== undefined) return approvalProblem(approval);
  return undefined;
}

function approvalProblem(approval: unknown): string | undefined {
  if (typeof approval === 'string') {
    return approval.length > 0 && approval.length <= 256 ? undefined : 'approval must be a token string';
  }
  const given =
    typeof approval === 'object' && approval !== null ? (approval as Record<string, unknown>) : {};
  if (given.deniedBy !== undefined && given.approvedBy === undefined) {
    if (!nonEmpty(given.deniedBy)) return 'approval.deniedBy must be a non-empty string';
    return given.reason === undefined || nonEmpty(given.reason)
      ? undefined
      : 'approval.reason must be a non-empty string';
  }
  return nonEmpty(given.approvedBy) && given.deniedBy === undefined
    ? undefined
    : 'approval must be a token string, { approvedBy: string } or { deniedBy: string, reason?: string }';
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}
