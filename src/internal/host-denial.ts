/**
 * A call a person refused in the host (`options.approval` of `{ deniedBy }`): its `approval_denied`.
 * @module
 */

import { DispatchError } from '../errors.js';
import type { DispatchContext } from '../types.js';

/**
 * The `approval_denied` envelope of a call whose `approval` option is a host's denial, or
 * `undefined`. The approval gate answers with it; the attempt step does too, so that a refused
 * call never runs in a stack without a gate.
 */
export function hostDenialOf(ctx: DispatchContext): DispatchError | undefined {
  const { approval } = ctx.options;
  if (typeof approval !== 'object' || !('deniedBy' in approval)) return undefined;
  const reason = approval.reason ?? 'a reviewer denied it';
  return new DispatchError('approval_denied', `"${ctx.displayName}" was denied: ${reason}; it has not run`, {
    attempts: ctx.attempt,
  });
}
